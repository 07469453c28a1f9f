// Exercise 04.1, the reference solution: the bucket plan.
#include "chapters/04_data_parallel/bucket_plan.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch04 {

namespace {

// The layout ParamStore makes, or the message of the first thing that is not: every parameter
// non-empty, each starting where the previous one ends, the first at element 0.
void check_layout(const std::vector<ParamInfo>& infos) {
  if (infos.empty()) throw Error("bucket_plan: no parameters");
  std::int64_t expected = 0;  // where parameter i must start
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParamInfo& p = infos[i];
    const std::string who = "bucket_plan: parameter " + std::to_string(i) + " (" + p.name + ")";
    if (p.numel < 1) throw Error(who + " has " + std::to_string(p.numel) + " elements");
    if (p.offset != expected)
      throw Error(who + " starts at element " + std::to_string(p.offset) + ", not " + std::to_string(expected) +
                  ": the layout must be back to back from element 0");
    expected = p.offset + p.numel;
  }
}

}  // namespace

BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype) {
  if (cap_bytes <= 0) throw Error("bucket_plan: the cap must be positive, got " + std::to_string(cap_bytes) + " bytes");
  check_layout(infos);
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
