// Mesh: how the world's ranks are split into data / tensor / context / pipeline parallel
// groups (and expert groups inside data x context).
//
// The layout is pure data: MeshLayout says, for any rank, its coordinate along each dimension
// and the ranks of each of its groups, without any communication, so tests can check group
// membership for any layout and rank order. Mesh then builds one Communicator per group.
//
// Rank order: `order` lists the dimensions from fastest- to slowest-varying, e.g. the default
// "tp-cp-dp-pp" puts tensor-parallel peers on consecutive ranks (same node, fastest links) and
// pipeline stages furthest apart. world = dp · tp · cp · pp must hold exactly.
// Expert parallelism lives inside the dp·cp ranks that share a (tp, pp) coordinate: those
// ranks, numbered by (cp fastest, then dp), are cut into consecutive ep groups of size ep;
// ep must divide dp·cp. The "expert data parallel" group joins the ranks at the same position
// of different ep groups.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"

namespace usp {

enum class MeshDim : unsigned char { dp, tp, cp, pp };
inline constexpr int kNumMeshDims = 4;
const char* mesh_dim_name(MeshDim d);  // "dp", "tp", "cp", "pp"

struct MeshSizes {
  int dp = 1, tp = 1, cp = 1, pp = 1, ep = 1;
  int world() const { return dp * tp * cp * pp; }
  int operator[](MeshDim d) const;
};

class MeshLayout {
 public:
  // Throws UsageError when the sizes do not multiply to world_size, any size is < 1, ep does
  // not divide dp·cp, or order is not a permutation of dp, tp, cp, pp ("tp-cp-dp-pp").
  MeshLayout(int world_size, MeshSizes sizes, const std::string& order = "tp-cp-dp-pp");

  int world_size() const { return world_; }
  const MeshSizes& sizes() const { return sizes_; }
  const std::string& order() const { return order_text_; }

  // Coordinates of a rank and back.
  std::array<int, kNumMeshDims> coords(int rank) const;  // indexed by MeshDim
  int coord(int rank, MeshDim d) const { return coords(rank)[static_cast<int>(d)]; }
  int rank_of(const std::array<int, kNumMeshDims>& coords) const;

  // The world ranks of rank's group along d (all other coordinates fixed), ordered by the
  // coordinate along d; rank's own index in it is coord(rank, d).
  std::vector<int> group(int rank, MeshDim d) const;
  // The data-parallel group of a model replica when context parallelism also shards data:
  // ranks sharing tp and pp coordinates (dp·cp of them), ordered cp fastest.
  std::vector<int> dp_cp_group(int rank) const;
  std::vector<int> ep_group(int rank) const;       // the rank's expert-parallel group
  std::vector<int> ep_dp_group(int rank) const;    // same expert shard, other ep groups
  int ep_rank(int rank) const;                     // index within ep_group

 private:
  int world_;
  MeshSizes sizes_;
  std::string order_text_;
  std::array<MeshDim, kNumMeshDims> order_{};  // fastest first
};

// The communicators of one rank's groups, split from a world communicator (collective: every
// world rank constructs its Mesh with the same layout).
class Mesh {
 public:
  Mesh(Communicator& world, const MeshLayout& layout);
  const MeshLayout& layout() const { return layout_; }
  int rank() const { return rank_; }
  int coord(MeshDim d) const { return layout_.coord(rank_, d); }

  Communicator& dp() { return *groups_[0]; }
  Communicator& tp() { return *groups_[1]; }
  Communicator& cp() { return *groups_[2]; }
  Communicator& pp() { return *groups_[3]; }
  Communicator& dp_cp() { return *dp_cp_; }
  Communicator& ep() { return *ep_; }
  Communicator& ep_dp() { return *ep_dp_; }
  Communicator& group(MeshDim d) { return *groups_[static_cast<int>(d)]; }

 private:
  MeshLayout layout_;
  int rank_;
  std::array<std::unique_ptr<Communicator>, kNumMeshDims> groups_;
  std::unique_ptr<Communicator> dp_cp_, ep_, ep_dp_;
};

}  // namespace usp
