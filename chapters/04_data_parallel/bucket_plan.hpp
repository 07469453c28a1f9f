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

// Exercise 04.1: the bucket plan for parameters laid out as `infos` (ParamStore::infos()),
// gradients of `dtype`, and a cap of cap_bytes, by the rule above.
// Invariants of the result: every parameter in exactly one bucket; read bucket after bucket, the
// indices run from infos.size() - 1 down to 0 with none skipped; each bucket's [begin, end) is
// exactly the elements of its parameters and bytes = (end - begin) · dtype_size(dtype); every
// bucket but the last has bytes >= cap_bytes and was below the cap before its last parameter; the
// last one may stay below it. plan.cap_bytes and plan.dtype are the arguments.
// The plan is only right if the layout is what ParamStore makes, so it checks that first. Errors
// (usp::Error, the message exactly this; the first that applies, in this order, the parameters
// from index 0 up, each one's elements checked before its offset):
//   "bucket_plan: the cap must be positive, got <cap_bytes> bytes"
//   "bucket_plan: no parameters"
//   "bucket_plan: parameter <i> (<name>) has <numel> elements"                    (numel < 1)
//   "bucket_plan: parameter <i> (<name>) starts at element <offset>, not <expected>: the layout
//    must be back to back from element 0"   (on one line; expected = 0 for i = 0, else where
//                                            parameter i-1 ends: a gap, an overlap, a repeat)
BucketPlan bucket_plan(const std::vector<ParamInfo>& infos, std::int64_t cap_bytes, DType dtype);

}  // namespace usp::ch04
