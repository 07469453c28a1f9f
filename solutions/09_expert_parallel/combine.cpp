// Exercise 09.2, the reference solution: the combine's return trip (contract in
// chapters/09_expert_parallel/all_to_all_experts.hpp, from_experts).
#include <numeric>
#include <string>

#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/error.hpp"

namespace usp::ch09 {

namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); }

// The route against the group and the tensors, before anything moves: a wrong count would send
// rows that a peer does not expect (a hang, or rows in the wrong place). A rank that throws here
// ends the job (docs/ARCHITECTURE.md, principle 5) before any rank enters the exchange.
void check(const ExpertRoute& route, std::int64_t ep, std::int64_t L, const Tensor& results, const Tensor& rows) {
  const auto n = [](std::size_t size) { return std::to_string(size); };
  if (static_cast<std::int64_t>(route.send_counts.size()) != ep ||
      static_cast<std::int64_t>(route.recv_counts.size()) != ep ||
      static_cast<std::int64_t>(route.recv_by_expert.size()) != ep * L)
    throw Error("from_experts: the route has " + n(route.send_counts.size()) + " send counts, " +
                n(route.recv_counts.size()) + " receive counts and " + n(route.recv_by_expert.size()) +
                " blocks; the group needs ep = " + std::to_string(ep) + " and ep·L = " + std::to_string(ep * L));
  for (std::int64_t s = 0; s < ep; ++s) {
    const auto first = route.recv_by_expert.begin() + s * L;
    const std::int64_t blocks = std::accumulate(first, first + L, std::int64_t{0});
    if (blocks != route.recv_counts[static_cast<std::size_t>(s)])
      throw Error("from_experts: the route's blocks from rank " + std::to_string(s) + " hold " + std::to_string(blocks) +
                  " rows, its receive count " + std::to_string(route.recv_counts[static_cast<std::size_t>(s)]));
  }
  if (results.ndim() != 2 || rows.ndim() != 2 || results.dim(1) != rows.dim(1))
    throw Error("from_experts: results " + shape_str(results.shape()) + " and rows " + shape_str(rows.shape()) +
                " are not [n, C] of one width C");
  if (results.dim(0) != sum(route.recv_counts))
    throw Error("from_experts: results has " + std::to_string(results.dim(0)) + " rows, the route received " +
                std::to_string(sum(route.recv_counts)));
  if (rows.dim(0) != sum(route.send_counts))
    throw Error("from_experts: rows has " + std::to_string(rows.dim(0)) + " rows, the route sent " +
                std::to_string(sum(route.send_counts)));
  if (results.dtype() != rows.dtype())
    throw Error(std::string("from_experts: results are ") + dtype_name(results.dtype()) + ", rows " +
                dtype_name(rows.dtype()));
}

}  // namespace

void AllToAllExperts::from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) {
  const std::int64_t ep = ep_.size(), L = local_experts();
  check(route, ep, L, results, rows);
  const std::int64_t C = results.dim(1);
  // Expert-major -> source-major, the inverse of to_experts' regrouping: block (s, j) goes back to
  // where the all-to-all-v delivered it, so that each source's rows are one contiguous chunk.
  const BlockOffsets o = block_offsets(route, L);
  Tensor outgoing = Tensor::empty(results.shape(), results.dtype(), MemCategory::CommBuffer, results.device());
  for (std::int64_t s = 0; s < ep; ++s)
    for (std::int64_t j = 0; j < L; ++j) {
      const auto b = static_cast<std::size_t>(s * L + j);
      const std::int64_t n = route.recv_by_expert[b];
      if (n == 0) continue;
      outgoing.slice(o.by_source[b], o.by_source[b] + n).copy_from(results.slice(o.by_expert[b], o.by_expert[b] + n));
    }
  // What came from rank s goes back to s: the dispatch's counts, transposed (in elements).
  std::vector<std::int64_t> send(static_cast<std::size_t>(ep)), recv(static_cast<std::size_t>(ep));
  for (std::size_t d = 0; d < send.size(); ++d) {
    send[d] = route.recv_counts[d] * C;
    recv[d] = route.send_counts[d] * C;
  }
  ep_.all_to_allv(outgoing, send, rows, recv);
}

}  // namespace usp::ch09
