#include "common/model/expert_parallel.hpp"

#include <numeric>

#include "common/error.hpp"

namespace usp {

ExpertRoute SingleDeviceExperts::route(const std::vector<std::int64_t>& counts) {
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  return {{total}, {total}, counts};
}

void SingleDeviceExperts::to_experts(const ExpertRoute& route, const Tensor& rows, Tensor& received) {
  USP_CHECK(rows.dim(0) == route.send_counts[0], "SingleDeviceExperts::to_experts: rows do not match the route");
  received.copy_from(rows);
}

void SingleDeviceExperts::from_experts(const ExpertRoute& route, const Tensor& results, Tensor& rows) {
  USP_CHECK(results.dim(0) == route.recv_counts[0], "SingleDeviceExperts::from_experts: rows do not match the route");
  rows.copy_from(results);
}

}  // namespace usp
