// Mesh: the rank-order arithmetic of MeshLayout and the group communicators of Mesh.
//
// Convention (see mesh.hpp): `order` names the dimensions fastest-varying first, so a rank is a
// mixed-radix number whose digits are the coordinates:
//   rank = c[o0] + s[o0] * (c[o1] + s[o1] * (c[o2] + s[o2] * c[o3]))
// where o0..o3 is the order and s the sizes. With the default "tp-cp-dp-pp" the tp peers are
// consecutive ranks and the pipeline stages are world/pp ranks apart.
#include "common/mesh.hpp"

#include <cstdint>
#include <sstream>

#include "common/error.hpp"

namespace usp {

namespace {

constexpr std::array<MeshDim, kNumMeshDims> kAllDims = {MeshDim::dp, MeshDim::tp, MeshDim::cp,
                                                       MeshDim::pp};

// The enum's index into per-dimension arrays. The modulo is a no-op for valid values; it tells
// GCC the index is in range (otherwise -Warray-bounds fires on coords() at -O2).
int idx(MeshDim d) { return static_cast<int>(d) % kNumMeshDims; }

// "tp-cp-dp-pp" -> {tp, cp, dp, pp}; anything but a permutation of the four names is refused,
// because a missing or repeated dimension would silently give a wrong rank order.
std::array<MeshDim, kNumMeshDims> parse_order(const std::string& text) {
  auto refuse = [&]() -> UsageError {
    return UsageError("mesh order '" + text + "' must name each of dp, tp, cp, pp exactly once" +
                      " (fastest-varying first, separated by '-', e.g. 'tp-cp-dp-pp')");
  };
  std::array<MeshDim, kNumMeshDims> order{};
  std::array<bool, kNumMeshDims> seen{};
  std::size_t n = 0, pos = 0;
  while (true) {
    const std::size_t dash = text.find('-', pos);
    const std::string name = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    bool known = false;
    for (MeshDim d : kAllDims) {
      if (name != mesh_dim_name(d)) continue;
      if (seen[idx(d)] || n >= order.size()) throw refuse();
      seen[idx(d)] = true;
      order[n++] = d;
      known = true;
    }
    if (!known) throw refuse();
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  if (n != order.size()) throw refuse();
  return order;
}

}  // namespace

const char* mesh_dim_name(MeshDim d) {
  switch (d) {
    case MeshDim::dp: return "dp";
    case MeshDim::tp: return "tp";
    case MeshDim::cp: return "cp";
    case MeshDim::pp: return "pp";
  }
  return "?";
}

int MeshSizes::operator[](MeshDim d) const {
  switch (d) {
    case MeshDim::dp: return dp;
    case MeshDim::tp: return tp;
    case MeshDim::cp: return cp;
    case MeshDim::pp: return pp;
  }
  return 1;
}

MeshLayout::MeshLayout(int world_size, MeshSizes sizes, const std::string& order)
    : world_(world_size), sizes_(sizes), order_text_(order) {
  if (world_size < 1)
    throw UsageError("the world size must be at least 1, got " + std::to_string(world_size));
  for (MeshDim d : kAllDims)
    if (sizes[d] < 1)
      throw UsageError(std::string("mesh size ") + mesh_dim_name(d) + " = " +
                       std::to_string(sizes[d]) + " must be at least 1");
  if (sizes.ep < 1)
    throw UsageError("mesh size ep = " + std::to_string(sizes.ep) + " must be at least 1");
  order_ = parse_order(order);

  // 64-bit product: four plausible-looking sizes must not wrap around into a "valid" world.
  const std::int64_t product = std::int64_t{sizes.dp} * sizes.tp * sizes.cp * sizes.pp;
  if (product != world_size) {
    std::ostringstream msg;
    msg << "dp·tp·cp·pp = " << sizes.dp << "·" << sizes.tp << "·" << sizes.cp << "·" << sizes.pp
        << " = " << product << " does not equal the world size " << world_size;
    throw UsageError(msg.str());
  }
  const int dp_cp = sizes.dp * sizes.cp;
  if (dp_cp % sizes.ep != 0)
    throw UsageError("ep = " + std::to_string(sizes.ep) + " must divide dp·cp = " +
                     std::to_string(dp_cp) + " (expert groups are cut from the data-parallel ranks)");
}

std::array<int, kNumMeshDims> MeshLayout::coords(int rank) const {
  if (rank < 0 || rank >= world_)
    throw Error("MeshLayout: rank " + std::to_string(rank) + " is outside the world of " +
                std::to_string(world_));
  std::array<int, kNumMeshDims> c{};
  int rest = rank;
  for (MeshDim d : order_) {
    c[idx(d)] = rest % sizes_[d];
    rest /= sizes_[d];
  }
  return c;
}

int MeshLayout::rank_of(const std::array<int, kNumMeshDims>& c) const {
  int rank = 0, stride = 1;
  for (MeshDim d : order_) {
    if (c[idx(d)] < 0 || c[idx(d)] >= sizes_[d])
      throw Error(std::string("MeshLayout: coordinate ") + mesh_dim_name(d) + " = " +
                  std::to_string(c[idx(d)]) + " is outside [0, " + std::to_string(sizes_[d]) + ")");
    rank += c[idx(d)] * stride;
    stride *= sizes_[d];
  }
  return rank;
}

std::vector<int> MeshLayout::group(int rank, MeshDim d) const {
  auto c = coords(rank);
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(sizes_[d]));
  for (int i = 0; i < sizes_[d]; ++i) {
    c[idx(d)] = i;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> MeshLayout::dp_cp_group(int rank) const {
  // Position p = cp + cp_size * dp: the replica's data shards, cp fastest, as mesh.hpp says.
  auto c = coords(rank);
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(sizes_.dp * sizes_.cp));
  for (int dp = 0; dp < sizes_.dp; ++dp)
    for (int cp = 0; cp < sizes_.cp; ++cp) {
      c[idx(MeshDim::dp)] = dp;
      c[idx(MeshDim::cp)] = cp;
      ranks.push_back(rank_of(c));
    }
  return ranks;
}

int MeshLayout::ep_rank(int rank) const {
  const auto c = coords(rank);
  const int position = c[idx(MeshDim::cp)] + sizes_.cp * c[idx(MeshDim::dp)];
  return position % sizes_.ep;
}

std::vector<int> MeshLayout::ep_group(int rank) const {
  // Consecutive positions of dp_cp_group: [first, first + ep).
  const auto replica = dp_cp_group(rank);
  const auto c = coords(rank);
  const int position = c[idx(MeshDim::cp)] + sizes_.cp * c[idx(MeshDim::dp)];
  const int first = position - position % sizes_.ep;
  return std::vector<int>(replica.begin() + first, replica.begin() + first + sizes_.ep);
}

std::vector<int> MeshLayout::ep_dp_group(int rank) const {
  // The same ep_rank in every ep group: positions ep_rank, ep_rank + ep, ep_rank + 2·ep, ...
  const auto replica = dp_cp_group(rank);
  std::vector<int> ranks;
  for (std::size_t p = static_cast<std::size_t>(ep_rank(rank)); p < replica.size();
       p += static_cast<std::size_t>(sizes_.ep))
    ranks.push_back(replica[p]);
  return ranks;
}

namespace {

// One collective split per group kind. The groups of a kind partition the world, so the
// group's first world rank names it uniquely (a valid, non-negative color), and the key is
// the rank's index in the group, so the communicator's rank order is the layout's order.
std::unique_ptr<Communicator> split_into(Communicator& world, const std::vector<int>& group, int rank) {
  int key = -1;
  for (std::size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank) key = static_cast<int>(i);
  if (key < 0) throw Error("Mesh: rank " + std::to_string(rank) + " is missing from its own group");
  return world.split(group.front(), key);
}

}  // namespace

Mesh::Mesh(Communicator& world, const MeshLayout& layout) : layout_(layout), rank_(world.rank()) {
  if (world.size() != layout.world_size())
    throw UsageError("the mesh was laid out for " + std::to_string(layout.world_size()) +
                     " ranks but the communicator has " + std::to_string(world.size()));
  // Every rank runs the same sequence of splits: dp, tp, cp, pp, dp_cp, ep, ep_dp.
  for (MeshDim d : kAllDims) groups_[idx(d)] = split_into(world, layout_.group(rank_, d), rank_);
  dp_cp_ = split_into(world, layout_.dp_cp_group(rank_), rank_);
  ep_ = split_into(world, layout_.ep_group(rank_), rank_);
  ep_dp_ = split_into(world, layout_.ep_dp_group(rank_), rank_);
}

}  // namespace usp
