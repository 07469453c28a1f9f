// Exercise 09.2 — the combine's return trip (chapters/09_expert_parallel/all_to_all_experts.hpp).
//
// from_experts(route, results, rows): results [Σ recv, C] laid out as to_experts delivered its
//   rows (grouped by local expert) -> rows [Σ send, C] laid out as the dispatch's input: every
//   result back on the rank its row came from, at the place it left from. Undo the regrouping
//   (block_offsets), then one all-to-all-v whose counts are the dispatch's, transposed. As in
//   09.1: copies between row slices, buffers on the results' device.
// The backward needs nothing more: the MoE layer sends its gradients through the same two moves.
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/error.hpp"

namespace usp::ch09 {

void AllToAllExperts::from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) {
  (void)route, (void)results, (void)rows;
  throw NotImplemented("exercise 09.2: AllToAllExperts::from_experts (hint: what you received from rank s goes "
                       "back to rank s: swap the send and receive counts of the dispatch)");
}

}  // namespace usp::ch09
