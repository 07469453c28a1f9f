// Exercise 09.1 — the dispatch (chapters/09_expert_parallel/all_to_all_experts.hpp states the
// layouts; the lesson draws them).
//
// block_offsets(route, L): for each block (s, j) — the rows source s sent for local expert j —
//   its first row in the order the all-to-all-v delivers them (by_source: source 0's blocks
//   first, each source's in expert order) and in the order the experts compute them (by_expert:
//   expert 0's blocks first, each expert's in source order).
// route(counts): counts[e] rows for expert e (e = 0..E-1; rank d holds experts d·L .. d·L+L-1).
//   Exchange the counts so that every rank learns recv_by_expert[s·L + j]; fill send_counts[d]
//   (rows to rank d) and recv_counts[s] (rows from rank s). Collective over the ep group.
// to_experts(route, rows, received): rows [Σ counts, C] grouped by expert -> received [Σ recv, C]
//   grouped by local expert. One all-to-all-v (counts in ELEMENTS, i.e. rows · C), then the
//   regrouping. Any dtype and any device: move a block as a copy between row slices
//   (Tensor::slice(begin, end).copy_from(...)); buffers on rows.device().
//   The counts: write them into a host i32 tensor, and send it where the group's tensors live
//   (ep_.device(): .to(...) it there and back when that is a GPU).
// Invariants the tests check: Σ recv_counts over all ranks = Σ send_counts; to_experts then
// from_experts returns every row to its place, bit for bit; training equals one device.
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/error.hpp"

namespace usp::ch09 {

BlockOffsets block_offsets(const ExpertRoute& route, std::int64_t local_experts) {
  (void)route, (void)local_experts;
  throw NotImplemented("exercise 09.1: block_offsets (hint: two running sums over the blocks' sizes, "
                       "one visiting sources outermost, the other local experts outermost)");
}

ExpertRoute AllToAllExperts::route(const std::vector<std::int64_t>& counts) {
  (void)counts;
  throw NotImplemented("exercise 09.1: AllToAllExperts::route (hint: an all-to-all of the E counts as i32: chunk d "
                       "of yours goes to rank d, chunk s of what you get is source s's counts for your experts)");
}

void AllToAllExperts::to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) {
  (void)route, (void)rows, (void)received;
  throw NotImplemented("exercise 09.1: AllToAllExperts::to_experts (hint: all_to_allv into a staging buffer, then "
                       "move each block from its by_source to its by_expert offset)");
}

}  // namespace usp::ch09
