// AllToAllExperts: the experts spread over an expert-parallel group, the token rows moved to them
// and back with all-to-all-v (the ExpertParallel of common/model/expert_parallel.hpp, whose
// comments fix the layouts). Exercise 09.1 writes the dispatch (route + to_experts), 09.2 the
// combine's return trip (from_experts).
//
// ep ranks, E experts, L = E / ep local experts each: rank r holds experts r·L .. r·L + L - 1.
// One MoE layer on rank r, with its own tokens:
//
//   rows (this rank's kept assignments, grouped by expert)    counts[e] rows for expert e
//   | expert 0 | expert 1 | ... | expert L-1 | expert L | ... | expert E-1 |
//   \________ to rank 0 ________________/     \____ to rank 1 ____/  ...
//
//   route:       every rank tells every other how many rows it sends for each of its experts
//                (an all-to-all of the count matrix), so each rank knows, per source s and
//                local expert j, recv_by_expert[s·L + j]
//   to_experts:  send_counts[d] = Σ_{e of rank d} counts[e] rows (·C elements) to rank d, one
//                all-to-all-v; the rows arrive grouped by source, and within a source by local
//                expert; regroup them so that each local expert's rows are contiguous
//                (expert 0: from source 0, source 1, ...; then expert 1; ...)
//   from_experts: the inverse: ungroup back to source order, all-to-all-v with the counts
//                transposed (what came from s goes back to s), so every row lands where it
//                left from.
// The backward uses the same two moves in the other roles (moe.hpp): the combine's gradient goes
// to the experts with to_experts, their input gradient comes back with from_experts.
#pragma once
#include <cstdint>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/model/expert_parallel.hpp"

namespace usp::ch09 {

class AllToAllExperts final : public ExpertParallel {
 public:
  // ep: the expert-parallel group (not owned). experts: E, a multiple of ep.size().
  AllToAllExperts(Communicator& ep, std::int64_t experts);

  std::int64_t size() const override { return ep_.size(); }
  std::int64_t rank() const override { return ep_.rank(); }
  std::int64_t local_experts() const { return experts_ / ep_.size(); }

  // Exercise 09.1 (solutions/09_expert_parallel/dispatch.cpp).
  ExpertRoute route(const std::vector<std::int64_t>& counts) override;
  void to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) override;
  // Exercise 09.2 (solutions/09_expert_parallel/combine.cpp).
  void from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) override;

 private:
  Communicator& ep_;
  std::int64_t experts_;
};

// Where each block of rows sits in the two layouts at the experts (exercise 09.1 and 09.2 both
// need it; written in exercise 09.1's file): block (s, j) = the rows source s sent for local
// expert j. by_source[s·L + j] = its first row in the order the all-to-all-v delivers them
// (source-major), by_expert[s·L + j] = its first row grouped by expert (expert-major).
struct BlockOffsets {
  std::vector<std::int64_t> by_source, by_expert;
};
BlockOffsets block_offsets(const ExpertRoute& route, std::int64_t local_experts);

}  // namespace usp::ch09
