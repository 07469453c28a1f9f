// Chapter 04, the pure parts: the bucket plan (exercise 04.1) against its rule, and the overlap
// measurement against hand-made timelines. No communication.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "chapters/04_data_parallel/comm_overlap.hpp"

using namespace usp;
using namespace usp::ch04;

namespace {

// Parameters of the given element counts, back to back, as ParamStore lays them out.
std::vector<ParamInfo> layout_of(const std::vector<std::int64_t>& numels) {
  std::vector<ParamInfo> infos;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    ParamInfo p;
    p.name = "p";
    p.name += std::to_string(i);  // not "p" + ...: GCC 12 warns falsely (-Wrestrict) on that once inlined
    p.shape = {numels[i]};
    p.offset = offset;
    p.numel = numels[i];
    infos.push_back(p);
    offset += numels[i];
  }
  return infos;
}

// The rule, checked from the outside on any plan: every parameter exactly once, in descending
// index order across the buckets; each bucket a contiguous flat range with bytes = its size;
// each bucket but the last closed exactly when its bytes first reached the cap (so without its
// last parameter it was below the cap); the last one either the same or below the cap.
void check_rule(const std::vector<ParamInfo>& infos, const BucketPlan& plan, std::int64_t cap, DType dtype) {
  const auto elem = static_cast<std::int64_t>(dtype_size(dtype));
  CHECK(plan.cap_bytes == cap);
  CHECK(plan.dtype == dtype);
  REQUIRE(!plan.buckets.empty());
  int expect = static_cast<int>(infos.size()) - 1;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    INFO("bucket " << b << " of " << plan.buckets.size() << ", cap " << cap);
    const Bucket& k = plan.buckets[b];
    REQUIRE(!k.params.empty());
    std::int64_t bytes = 0;
    for (int p : k.params) {
      CHECK(p == expect);  // reverse parameter order, nothing skipped or repeated
      expect -= 1;
      bytes += infos[static_cast<std::size_t>(p)].numel * elem;
    }
    const ParamInfo& lowest = infos[static_cast<std::size_t>(k.params.back())];
    const ParamInfo& highest = infos[static_cast<std::size_t>(k.params.front())];
    CHECK(k.begin == lowest.offset);
    CHECK(k.end == highest.offset + highest.numel);
    CHECK(k.bytes == bytes);
    CHECK(k.bytes == (k.end - k.begin) * elem);  // contiguous: one view of the flat buffer
    const std::int64_t before_last = bytes - infos[static_cast<std::size_t>(k.params.back())].numel * elem;
    CHECK(before_last < cap);  // it did not stay open past the cap
    if (b + 1 < plan.buckets.size()) CHECK(bytes >= cap);  // it closed because it reached the cap
  }
  CHECK(expect == -1);  // every parameter placed
}

}  // namespace

TEST_CASE("exercise 04.1: buckets of an uneven layout, worked by hand", "[ch04]") {
  // Element counts (f32: ×4 bytes) of parameters 0..6, and a cap of 64 bytes (16 floats).
  // Walking down from parameter 6:
  //   6 (1 float, 4 B) + 5 (100 floats, 400 B) = 404 B >= 64        -> bucket {6, 5}
  //   4 (7, 28 B) + 3 (7, 28 B) = 56 B < 64; + 2 (50, 200 B) = 256 B -> bucket {4, 3, 2}
  //   1 (3, 12 B) + 0 (10, 40 B) = 52 B < 64, the end               -> bucket {1, 0}
  const auto infos = layout_of({10, 3, 50, 7, 7, 100, 1});
  const BucketPlan plan = bucket_plan(infos, 64, DType::f32);
  REQUIRE(plan.buckets.size() == 3);
  CHECK(plan.buckets[0].params == std::vector<int>{6, 5});
  CHECK(plan.buckets[1].params == std::vector<int>{4, 3, 2});
  CHECK(plan.buckets[2].params == std::vector<int>{1, 0});
  // Flat ranges (offsets 0, 10, 13, 63, 70, 77, 177, end 178) and bytes.
  CHECK(plan.buckets[0].begin == 77);
  CHECK(plan.buckets[0].end == 178);
  CHECK(plan.buckets[0].bytes == 404);
  CHECK(plan.buckets[1].begin == 13);
  CHECK(plan.buckets[1].end == 77);
  CHECK(plan.buckets[1].bytes == 256);
  CHECK(plan.buckets[2].begin == 0);
  CHECK(plan.buckets[2].end == 13);
  CHECK(plan.buckets[2].bytes == 52);
  check_rule(infos, plan, 64, DType::f32);

  // The cap is in bytes: bf16 gradients take half the bytes, so more parameters share a
  // bucket. Cap 256 B: 6 (2 B) + 5 (200 B) + 4 (14) + 3 (14) = 230 < 256, + 2 (100) = 330
  //   -> {6, 5, 4, 3, 2}; then 1 (6) + 0 (20) = 26 -> {1, 0}. (In f32 the same cap gives
  //   404 -> {6, 5}, then 56 + 200 = 256 -> {4, 3, 2}, then {1, 0}.)
  const BucketPlan half = bucket_plan(infos, 256, DType::bf16);
  REQUIRE(half.buckets.size() == 2);
  CHECK(half.buckets[0].params == std::vector<int>{6, 5, 4, 3, 2});
  CHECK(half.buckets[0].bytes == 330);
  CHECK(half.buckets[1].params == std::vector<int>{1, 0});
  check_rule(infos, half, 256, DType::bf16);
  const BucketPlan full = bucket_plan(infos, 256, DType::f32);
  REQUIRE(full.buckets.size() == 3);
  CHECK(full.buckets[1].params == std::vector<int>{4, 3, 2});

  // A bucket reaching the cap exactly closes: cap 404 B -> {6, 5}, then 56 + 200 = 256, + 12 +
  // 40 = 308 < 404 at the end -> {4, 3, 2, 1, 0}.
  const BucketPlan exact = bucket_plan(infos, 404, DType::f32);
  REQUIRE(exact.buckets.size() == 2);
  CHECK(exact.buckets[0].params == std::vector<int>{6, 5});
  CHECK(exact.buckets[1].params == std::vector<int>{4, 3, 2, 1, 0});
  // A cap of one byte: one bucket per parameter; a cap above everything: one bucket.
  CHECK(bucket_plan(infos, 1, DType::f32).buckets.size() == infos.size());
  const BucketPlan one = bucket_plan(infos, 1 << 20, DType::f32);
  REQUIRE(one.buckets.size() == 1);
  CHECK(one.buckets[0].begin == 0);
  CHECK(one.buckets[0].end == 178);
}

TEST_CASE("exercise 04.1: the rule holds on the model's own layouts", "[ch04]") {
  for (bool tied : {false, true}) {
    ModelConfig c = ModelConfig::builtin("usp-tiny");
    c.tied_embeddings = tied;
    const auto infos = llama_param_layout(c);
    const std::int64_t total = c.num_parameters() * 4;
    // From one parameter per bucket (1 B) to a single bucket (above the total), via caps that
    // fall inside and between the uneven parameter sizes (norms 256 B, matrices 8-64 KiB).
    for (std::int64_t cap : {std::int64_t{1}, std::int64_t{300}, std::int64_t{20000}, std::int64_t{65536},
                             std::int64_t{100000}, total - 1, total, total + 1}) {
      for (DType dt : {DType::f32, DType::bf16}) {
        INFO("tied " << tied << ", cap " << cap << ", " << dtype_name(dt));
        check_rule(infos, bucket_plan(infos, cap, dt), cap, dt);
      }
    }
    CHECK(bucket_plan(infos, 1, DType::f32).buckets.size() == infos.size());
    CHECK(bucket_plan(infos, total, DType::f32).buckets.size() == 1);
  }
}

TEST_CASE("exercise 04.1: a layout it cannot plan is refused, with the contract's message", "[ch04]") {
  const auto infos = layout_of({10, 3, 50, 7});  // offsets 0, 10, 13, 63; end 70
  const std::string back_to_back = ": the layout must be back to back from element 0";
  // The cap first, whatever the layout.
  CHECK_THROWS_WITH(bucket_plan(infos, 0, DType::f32), "bucket_plan: the cap must be positive, got 0 bytes");
  CHECK_THROWS_WITH(bucket_plan({}, -5, DType::f32), "bucket_plan: the cap must be positive, got -5 bytes");
  CHECK_THROWS_WITH(bucket_plan({}, 64, DType::f32), "bucket_plan: no parameters");
  // A parameter without elements would make an empty view (or a bucket of 0 bytes).
  auto empty = layout_of({10, 3, 0, 7});
  CHECK_THROWS_WITH(bucket_plan(empty, 64, DType::f32), "bucket_plan: parameter 2 (p2) has 0 elements");
  auto negative = infos;
  negative[3].numel = -7;
  CHECK_THROWS_WITH(bucket_plan(negative, 64, DType::f32), "bucket_plan: parameter 3 (p3) has -7 elements");
  // A gap (parameter 2 one element late): a bucket's range would hold an element of no parameter.
  auto gap = infos;
  gap[2].offset = 14;
  gap[3].offset = 64;
  CHECK_THROWS_WITH(bucket_plan(gap, 64, DType::f32),
                    "bucket_plan: parameter 2 (p2) starts at element 14, not 13" + back_to_back);
  // An overlap, and the same view listed twice: two parameters' gradients in one element.
  auto overlap = infos;
  overlap[1].offset = 5;
  CHECK_THROWS_WITH(bucket_plan(overlap, 64, DType::f32),
                    "bucket_plan: parameter 1 (p1) starts at element 5, not 10" + back_to_back);
  auto twice = infos;
  twice.insert(twice.begin() + 2, infos[1]);
  CHECK_THROWS_WITH(bucket_plan(twice, 64, DType::f32),
                    "bucket_plan: parameter 2 (p1) starts at element 10, not 13" + back_to_back);
  // The first parameter must start the buffer: every offset moved by 4 is refused at parameter 0.
  auto shifted = infos;
  for (ParamInfo& p : shifted) p.offset += 4;
  CHECK_THROWS_WITH(bucket_plan(shifted, 64, DType::f32),
                    "bucket_plan: parameter 0 (p0) starts at element 4, not 0" + back_to_back);
  // The first error in index order: parameter 1's overlap before parameter 3's missing elements.
  auto both = overlap;
  both[3].numel = 0;
  CHECK_THROWS_WITH(bucket_plan(both, 64, DType::f32),
                    "bucket_plan: parameter 1 (p1) starts at element 5, not 10" + back_to_back);
  // A single parameter larger than the cap is a bucket of its own, and the layout's end is the
  // last bucket's end.
  const BucketPlan big = bucket_plan(layout_of({1000}), 64, DType::f32);
  REQUIRE(big.buckets.size() == 1);
  CHECK(big.buckets[0].params == std::vector<int>{0});
  CHECK(big.buckets[0].end == 1000);
  CHECK(big.buckets[0].bytes == 4000);
}

TEST_CASE("comm overlap: the hidden part of each comm span, from a hand-made timeline", "[ch04]") {
  auto span = [](const char* name, const char* stream, double a, double b) { return Span{name, stream, a, b}; };
  const std::vector<Span> spans = {
      span("forward layer 0", "compute", 0, 10),      // forward: never counts
      span("backward head", "compute", 10, 20),
      span("backward layer 0", "compute", 20, 30),     // adjacent backward spans: [10, 30)
      span("all_reduce", "comm", 5, 15),               // 5 of 10 hidden (the forward part is not)
      span("all_reduce", "comm", 25, 45),              // 5 of 20 hidden
      span("optimizer", "compute", 45, 50),
      span("all_reduce", "comm", 46, 50),              // after backward: 0 of 4
  };
  const CommOverlap o = comm_overlap(spans);
  CHECK(o.comm_spans == 3);
  CHECK(o.overlapping_spans == 2);
  CHECK(o.comm_us == 34.0);
  CHECK(o.hidden_us == 10.0);
  CHECK(o.fraction() == Approx(10.0 / 34.0));
  CHECK(o.exposed_us() == 24.0);
  CHECK(o.backward_us == 20.0);
  CHECK(comm_overlap({}).fraction() == 0.0);
}
