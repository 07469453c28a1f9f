// ExpertParallel: how a mixture-of-experts layer (moe.hpp) moves token rows to the experts and
// back when the experts are spread over ranks (chapter 09). The model does the rest on every
// rank: routing its own tokens, computing the experts it holds, the weighted combine.
//
// A rank holds experts [rank·E/ep, (rank+1)·E/ep) (EpShard). One layer's exchange:
//   1. route(counts): counts[e] = the rows this rank sends to expert e (its kept assignments,
//      grouped by expert, e = 0..E-1). Every rank learns what it will receive (collective).
//   2. to_experts(route, rows, received): rows [Σ counts, C], grouped by expert in expert order
//      -> received [Σ recv, C], grouped by LOCAL EXPERT (local expert 0's rows first), each
//      expert's rows in source-rank order (source 0's first) and, from one source, in the order
//      that source sent them. Each expert's rows are contiguous: the model multiplies them at once.
//   3. from_experts(route, results, rows): the inverse move: results laid out like `received`
//      -> rows laid out like `rows` (each row back where it came from).
// The backward moves gradients with the same two calls in the other roles: the gradient of the
// combine's input goes to the experts with to_experts, the experts' input gradient comes back
// with from_experts. SingleDeviceExperts (ep = 1) moves nothing: received = rows.
#pragma once
#include <cstdint>
#include <vector>

#include "common/tensor.hpp"

namespace usp {

// What one exchange moves, from this rank's point of view (route() fills it).
struct ExpertRoute {
  std::vector<std::int64_t> send_counts;  // [ep]: rows this rank sends to each rank
  std::vector<std::int64_t> recv_counts;  // [ep]: rows it receives from each rank
  // [ep · E/ep]: rows received from rank s for local expert j at [s · E/ep + j].
  std::vector<std::int64_t> recv_by_expert;
};

class ExpertParallel {
 public:
  virtual ~ExpertParallel() = default;
  virtual std::int64_t size() const = 0;  // ep
  virtual std::int64_t rank() const = 0;  // this rank's place in the ep group
  // counts [E]: this rank's rows per expert (collective over the ep group).
  virtual ExpertRoute route(const std::vector<std::int64_t>& counts) = 0;
  virtual void to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) = 0;
  virtual void from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) = 0;
};

// Every expert here: the rows stay where they are (one source, so "grouped by expert" is already
// the order they come in).
class SingleDeviceExperts final : public ExpertParallel {
 public:
  std::int64_t size() const override { return 1; }
  std::int64_t rank() const override { return 0; }
  ExpertRoute route(const std::vector<std::int64_t>& counts) override;
  void to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) override;
  void from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) override;
};

}  // namespace usp
