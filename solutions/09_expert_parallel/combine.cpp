// Exercise 09.2 — the combine's return trip: every expert output goes back to the rank its row
// came from, to the place it left from.
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"

namespace usp::ch09 {

void AllToAllExperts::from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) {
  const std::int64_t C = results.dim(1);
  // Expert-major -> source-major, the inverse of to_experts' regrouping.
  const BlockOffsets o = block_offsets(route, local_experts());
  Tensor outgoing = Tensor::empty(results.shape(), results.dtype(), MemCategory::CommBuffer, results.device());
  for (std::size_t b = 0; b < route.recv_by_expert.size(); ++b) {
    const std::int64_t n = route.recv_by_expert[b];
    if (n == 0) continue;
    outgoing.slice(o.by_source[b], o.by_source[b] + n).copy_from(results.slice(o.by_expert[b], o.by_expert[b] + n));
  }
  // What came from rank s goes back to s: the dispatch's counts, transposed.
  std::vector<std::int64_t> send(route.recv_counts.size()), recv(route.send_counts.size());
  for (std::size_t d = 0; d < send.size(); ++d) {
    send[d] = route.recv_counts[d] * C;
    recv[d] = route.send_counts[d] * C;
  }
  ep_.all_to_allv(outgoing, send, rows, recv);
}

}  // namespace usp::ch09
