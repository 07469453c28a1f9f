// Exercise 04.1: the bucket plan.
//
// The contract (the rule the tests check) is in chapters/04_data_parallel/bucket_plan.hpp; the
// idea is in chapters/04_data_parallel/README.md ("Bucketing"). Replace the throw with your code.
// Check it with: ./usp test 04 --exercises, then run it with ./usp run 04 --exercises
#include "chapters/04_data_parallel/bucket_plan.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype) {
  (void)infos;
  (void)cap_bytes;
  (void)dtype;
  throw NotImplemented(
      "exercise 04.1: the bucket plan (hint: buckets fill in the order backward produces gradients)");
}

}  // namespace usp::ch04
