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
  // Exercise 09.2 (solutions/09_expert_parallel/combine.cpp): the combine's return trip.
  // Inputs, with ep = size(), L = local_experts():
  //   route    what route() returned for the dispatch this answers: send_counts [ep] (rows this
  //            rank sent to each rank), recv_counts [ep] (rows it received from each), and
  //            recv_by_expert [ep·L] (rows from source s for local expert j at s·L + j).
  //   results  [Σ recv_counts, C], laid out as to_experts delivered the rows (grouped by local
  //            expert, then by source, then in the source's order): row i is the experts' answer
  //            to received row i. Any dtype, on the group's device. Read only.
  //   rows     [Σ send_counts, C], results' dtype and device: overwritten.
  // Output, on every rank: rows laid out like the dispatch's input on this rank (grouped by
  //   global expert, in the order this rank sent them): every result is back on the rank its row
  //   came from, at the place it left from, bit for bit. Collective over the ep group; the bytes
  //   this rank sends are exactly the results it holds for other ranks (what it received from
  //   them), no more. The MoE layer's backward calls it too, with input gradients for results.
  // Errors (usp::Error, thrown before anything is sent; the message exactly):
  //   "from_experts: the route has <a> send counts, <b> receive counts and <c> blocks; the group
  //    needs ep = <ep> and ep·L = <ep·L>"                                        (one line)
  //   "from_experts: the route's blocks from rank <s> hold <x> rows, its receive count <y>"
  //   "from_experts: results <shape> and rows <shape> are not [n, C] of one width C"
  //   "from_experts: results has <n> rows, the route received <Σ recv_counts>"
  //   "from_experts: rows has <n> rows, the route sent <Σ send_counts>"
  //   "from_experts: results are <dtype>, rows <dtype>"                    (dtype_name: f32, bf16)
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
