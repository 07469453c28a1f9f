// Exercise 04.1, the reference solution: the bucket plan.
#include "chapters/04_data_parallel/bucket_plan.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype) {
  USP_CHECK(cap_bytes > 0, "bucket_plan: the cap must be positive");
  const auto elem = static_cast<std::int64_t>(dtype_size(dtype));
  BucketPlan plan;
  plan.cap_bytes = cap_bytes;
  plan.dtype = dtype;
  Bucket open;
  for (int i = static_cast<int>(infos.size()) - 1; i >= 0; --i) {
    const ParamInfo& p = infos[static_cast<std::size_t>(i)];
    if (open.params.empty()) open.end = p.offset + p.numel;  // the bucket's highest element
    open.params.push_back(i);
    open.begin = p.offset;  // walking down: each parameter extends the range to the left
    open.bytes += p.numel * elem;
    if (open.bytes >= cap_bytes) {
      plan.buckets.push_back(std::move(open));
      open = Bucket{};
    }
  }
  if (!open.params.empty()) plan.buckets.push_back(std::move(open));
  return plan;
}

}  // namespace usp::ch04
