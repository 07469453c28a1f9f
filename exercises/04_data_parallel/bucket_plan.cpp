// Exercise 04.1: the bucket plan.
//
// Read chapters/04_data_parallel/README.md ("Bucketing") and bucket_plan.hpp first. Then
// replace the throw:
//   1. walk the parameters from the last (infos.size() - 1) down to 0;
//   2. add each to the open bucket: its index to params, its bytes (numel · dtype_size(dtype))
//      to bytes, and widen [begin, end) to cover [offset, offset + numel);
//   3. as soon as the open bucket's bytes are >= cap_bytes, close it (push it to the plan) and
//      start a new one; at the end, a non-empty open bucket is the last one.
// Check your work with: ./usp test 04 --exercises
#include "chapters/04_data_parallel/bucket_plan.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype) {
  (void)infos;
  (void)cap_bytes;
  (void)dtype;
  throw NotImplemented(
      "exercise 04.1: bucket assignment — walk the parameters in reverse order, close a bucket once "
      "its bytes reach the cap");
}

}  // namespace usp::ch04
