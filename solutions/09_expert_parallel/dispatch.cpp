// Exercise 09.1 — the dispatch: exchange the counts, then move every row to its expert's rank.
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/device.hpp"
#include "common/error.hpp"

namespace usp::ch09 {

BlockOffsets block_offsets(const ExpertRoute& route, std::int64_t local_experts) {
  const std::int64_t L = local_experts, ep = static_cast<std::int64_t>(route.recv_counts.size());
  BlockOffsets o;
  o.by_source.assign(route.recv_by_expert.size(), 0);
  o.by_expert.assign(route.recv_by_expert.size(), 0);
  std::int64_t at = 0;
  for (std::int64_t s = 0; s < ep; ++s)  // as delivered: source 0's blocks (its experts in order), source 1's, ...
    for (std::int64_t j = 0; j < L; ++j) {
      o.by_source[static_cast<std::size_t>(s * L + j)] = at;
      at += route.recv_by_expert[static_cast<std::size_t>(s * L + j)];
    }
  at = 0;
  for (std::int64_t j = 0; j < L; ++j)  // as computed: expert 0's blocks (from each source in order), expert 1's, ...
    for (std::int64_t s = 0; s < ep; ++s) {
      o.by_expert[static_cast<std::size_t>(s * L + j)] = at;
      at += route.recv_by_expert[static_cast<std::size_t>(s * L + j)];
    }
  return o;
}

ExpertRoute AllToAllExperts::route(const std::vector<std::int64_t>& counts) {
  const std::int64_t ep = ep_.size(), L = local_experts();
  USP_CHECK(static_cast<std::int64_t>(counts.size()) == experts_,
            "AllToAllExperts::route: one count per expert (" + std::to_string(experts_) + ")");
  // counts[d·L + j] is for rank d's local expert j: chunk d of the all-to-all goes to rank d, and
  // chunk s of what comes back is source s's counts for this rank's experts.
  // The counts are written on the host and travel where the group's tensors live (its device).
  Tensor mine = Tensor::empty({experts_}, DType::i32, MemCategory::CommBuffer);
  for (std::int64_t e = 0; e < experts_; ++e) mine.data<std::int32_t>()[e] = static_cast<std::int32_t>(counts[static_cast<std::size_t>(e)]);
  Tensor theirs = Tensor::empty({experts_}, DType::i32, MemCategory::CommBuffer, ep_.device());
  ep_.all_to_all(on_device(mine, ep_.device(), MemCategory::CommBuffer), theirs);
  theirs = on_device(theirs, Device::cpu(), MemCategory::CommBuffer);
  ExpertRoute r;
  r.send_counts.assign(static_cast<std::size_t>(ep), 0);
  r.recv_counts.assign(static_cast<std::size_t>(ep), 0);
  r.recv_by_expert.resize(static_cast<std::size_t>(experts_));
  for (std::int64_t d = 0; d < ep; ++d)
    for (std::int64_t j = 0; j < L; ++j) {
      const auto i = static_cast<std::size_t>(d * L + j);
      r.send_counts[static_cast<std::size_t>(d)] += counts[i];
      r.recv_by_expert[i] = theirs.data<std::int32_t>()[i];
      r.recv_counts[static_cast<std::size_t>(d)] += r.recv_by_expert[i];
    }
  return r;
}

void AllToAllExperts::to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) {
  const std::int64_t C = rows.dim(1), L = local_experts();
  // Rows for rank d are contiguous in `rows` (its experts are consecutive): counts in elements.
  std::vector<std::int64_t> send(route.send_counts.size()), recv(route.recv_counts.size());
  for (std::size_t d = 0; d < send.size(); ++d) {
    send[d] = route.send_counts[d] * C;
    recv[d] = route.recv_counts[d] * C;
  }
  Tensor delivered = Tensor::empty(received.shape(), received.dtype(), MemCategory::CommBuffer, received.device());
  ep_.all_to_allv(rows, send, delivered, recv);
  // Source-major as delivered -> expert-major: each block (s, j) moves as a whole, a copy between
  // two row slices (on whichever device the rows live).
  const BlockOffsets o = block_offsets(route, L);
  for (std::size_t b = 0; b < route.recv_by_expert.size(); ++b) {
    const std::int64_t n = route.recv_by_expert[b];
    if (n == 0) continue;
    received.slice(o.by_expert[b], o.by_expert[b] + n).copy_from(delivered.slice(o.by_source[b], o.by_source[b] + n));
  }
}

}  // namespace usp::ch09
