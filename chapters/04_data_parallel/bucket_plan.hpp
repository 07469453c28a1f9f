// Exercise 04.1: which gradients travel together — the bucket plan.
//
// Bucketing groups gradients into buckets of about `cap` bytes and all-reduces each bucket as
// one collective: fewer, larger messages than one per parameter, launched while backward is
// still running. Backward produces gradients in REVERSE parameter order, so buckets are filled
// in that order: the first bucket holds the last parameters (the LM head) and is the first one
// ready to go.
//
// The rule (what PyTorch DDP does, and what the tests check):
//   * walk the parameters from the last to the first, adding each to the open bucket;
//   * close the bucket as soon as its bytes reach the cap (bytes >= cap_bytes); the next
//     parameter opens a new one — so a parameter larger than the cap closes the bucket it
//     lands in, and a bucket is never split inside a parameter;
//   * whatever is left open at the end (bytes < cap) is the last bucket.
// Because the parameters live back to back in the flat gradient buffer (ParamStore), the
// parameters of one bucket are a contiguous range [begin, end) of it: a bucket is one view,
// flat_grad.view(begin, {end - begin}), and needs no copy.
//
// The plan is plain data (docs/ARCHITECTURE.md, principle 4): the real executor
// (gradient_sync.hpp) runs it on MPI or NCCL, and a cost-model simulator can time the same plan for cluster hardware.
#pragma once
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"
#include "common/model/params.hpp"

namespace usp::ch04 {

struct Bucket {
  std::vector<int> params;   // parameter indices, in the order backward produces them (descending)
  std::int64_t begin = 0;    // [begin, end): elements of the flat gradient buffer it covers
  std::int64_t end = 0;
  std::int64_t bytes = 0;    // (end - begin) · the gradient dtype's size
};

struct BucketPlan {
  std::int64_t cap_bytes = 0;
  DType dtype = DType::f32;  // the gradients' dtype (what a bucket's bytes are counted in)
  std::vector<Bucket> buckets;  // in launch order: bucket 0 is the first one backward fills
};

// Exercise 04.1: the bucket plan for parameters laid out as `infos` (ParamStore::infos(): in
// order, back to back: infos[i+1].offset == infos[i].offset + infos[i].numel), gradients of
// `dtype`, and a cap of cap_bytes > 0, by the rule above.
BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype);

}  // namespace usp::ch04
