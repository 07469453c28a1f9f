// Exercise 04.2 on real ranks (1, 2 and 4): the bucket launches of one backward on a hand-made
// plan of three buckets over a 16-element buffer — which all-reduces are in flight after each
// gradient, their order and ranges, the average after the wait — and every refusal the contract
// names, each leaving nothing in flight.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "chapters/04_data_parallel/bucket_launch.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/filled_tensor.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch04;
using namespace usp::testing;

namespace {

// Six parameters of uneven sizes, {1, 2, 3, 3, 4, 3} elements, over a 16-element flat buffer, and
// three buckets in the order backward fills them: {5, 4} = [9, 16), {3} = [6, 9), {2, 1, 0} = [0, 6).
constexpr std::size_t kParams = 6;
constexpr std::int64_t kElements = 16;
BucketPlan hand_plan() {
  BucketPlan plan;
  plan.cap_bytes = 12;
  plan.buckets = {Bucket{{5, 4}, 9, 16, 28}, Bucket{{3}, 6, 9, 12}, Bucket{{2, 1, 0}, 0, 6, 24}};
  return plan;
}

// Rank r's gradient: element i is (r + 1)(i + 1); averaged over n ranks, (i + 1)(n + 1)/2, exact.
Tensor rank_gradient(int r) {
  std::vector<float> values(kElements);
  for (int i = 0; i < kElements; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>((r + 1) * (i + 1));
  return Tensor::from_floats(values, {kElements});
}

// Element i as the wait leaves it: averaged where `averaged` covers it, this rank's own elsewhere.
std::vector<float> expected(int n, int r, const std::vector<std::pair<std::int64_t, std::int64_t>>& averaged) {
  std::vector<float> want(kElements);
  for (int i = 0; i < kElements; ++i) {
    bool in = false;
    for (const auto& [b, e] : averaged) in = in || (b <= i && i < e);
    want[static_cast<std::size_t>(i)] =
        in ? static_cast<float>((i + 1) * (n + 1)) / 2.0f : static_cast<float>((r + 1) * (i + 1));
  }
  return want;
}

std::uint64_t all_reduces(Communicator& c) { return c.stats().count(CommOp::all_reduce); }

}  // namespace

TEST_CASE("exercise 04.2: each bucket goes once all its gradients are final, in plan order", "[ch04][mpi]") {
  Communicator& comm = testing::world();
  const int n = comm.size(), r = comm.rank();
  const BucketPlan plan = hand_plan();
  Tensor flat = rank_gradient(r);
  BucketLaunchState state = start_bucket_launches(plan, kParams);
  CHECK(state.launched.empty());
  CHECK(state.next_bucket == 0);
  const std::uint64_t c0 = all_reduces(comm), bytes0 = comm.stats().sent(CommOp::all_reduce);
  // Ready order 5, 3, 4, 2, 0, 1: bucket 1 ({3}) completes before bucket 0 but must wait for it.
  const std::vector<std::pair<int, std::uint64_t>> steps = {
      {5, 0},  // bucket 0 still waits for 4
      {3, 0},  // bucket 1 is full, but bucket 0 goes first
      {4, 2},  // bucket 0 full: launch it, then bucket 1 right behind it
      {2, 2}, {0, 2},
      {1, 3},  // bucket 2 full
  };
  for (const auto& [param, launched] : steps) {
    INFO("exercise 04.2, rank " << r << ": after parameter " << param << " is ready, expected " << launched
                                << " buckets launched");
    on_grad_ready(state, param, comm, flat);
    CHECK(all_reduces(comm) - c0 == launched);
    CHECK(state.launched.size() == launched);
    CHECK(state.next_bucket == launched);
  }
  finish_bucket_launches(state);
  INFO("exercise 04.2, rank " << r << ": after finish_bucket_launches");
  CHECK(tensor_problem(flat, "exercise 04.2: flat_grad", {kElements}, DType::f32) == "");
  CHECK(state.launched.empty());
  CHECK(elementwise_mismatch(flat.to_floats(), expected(n, r, {{0, kElements}}), Tolerance::exact(), r) == "");
  // The bytes: a ring all-reduce of each bucket sends 2(n-1)/n of its bytes: of 64 in all
  // (exact for n = 1, 2, 4, where each bucket's share is whole). A bucket one element short, or
  // a copy all-reduced instead of the view, shows here or in the values above.
  if ((2 * (n - 1) * 4) % n == 0)
    CHECK(comm.stats().sent(CommOp::all_reduce) - bytes0 == static_cast<std::uint64_t>(2 * (n - 1) * 64 / n));
}

TEST_CASE("exercise 04.2: gradients in plan order launch each bucket on its last one; any order works", "[ch04][mpi]") {
  Communicator& comm = testing::world();
  const int n = comm.size(), r = comm.rank();
  const BucketPlan plan = hand_plan();
  // Forward order (0 first: the last bucket completes first and waits for all), and the backward
  // order the model uses (5 first: each bucket goes on its last gradient).
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2, 3, 4, 5}, std::vector<int>{5, 4, 3, 2, 1, 0}}) {
    Tensor flat = rank_gradient(r);
    BucketLaunchState state = start_bucket_launches(plan, kParams);
    std::vector<std::size_t> launched_after;
    for (const int p : order) {
      on_grad_ready(state, p, comm, flat);
      launched_after.push_back(state.launched.size());
    }
    finish_bucket_launches(state);
    INFO("exercise 04.2, rank " << r << ": ready order " << order.front() << " .. " << order.back());
    const std::vector<std::size_t> want =
        order.front() == 0 ? std::vector<std::size_t>{0, 0, 0, 0, 0, 3} : std::vector<std::size_t>{0, 1, 2, 2, 2, 3};
    CHECK(launched_after == want);
    CHECK(elementwise_mismatch(flat.to_floats(), expected(n, r, {{0, kElements}}), Tolerance::exact(), r) == "");
  }
}

TEST_CASE("exercise 04.2: a plan that does not hold every parameter exactly once is refused", "[ch04]") {
  INFO("exercise 04.2: start_bucket_launches must refuse this plan with the contract's message");
  BucketPlan plan = hand_plan();
  SECTION("a parameter outside the model") {
    plan.buckets[1].params = {3, 6};
    CHECK_THROWS_WITH(start_bucket_launches(plan, kParams),
                      Catch::StartsWith("bucket plan: parameter 6 is outside the model's 6 parameters"));
    plan.buckets[1].params = {-1, 3};
    CHECK_THROWS_WITH(start_bucket_launches(plan, kParams),
                      Catch::StartsWith("bucket plan: parameter -1 is outside the model's 6 parameters"));
  }
  SECTION("a parameter in two buckets") {
    plan.buckets[2].params = {2, 1, 0, 4};
    CHECK_THROWS_WITH(start_bucket_launches(plan, kParams),
                      Catch::StartsWith("bucket plan: parameter 4 is in buckets 0 and 2"));
  }
  SECTION("parameters in no bucket") {
    plan.buckets[2].params = {2};
    plan.buckets[0].params = {5};
    CHECK_THROWS_WITH(start_bucket_launches(plan, kParams),
                      Catch::StartsWith("bucket plan: parameter 0 is in no bucket"));
  }
  SECTION("more parameters in the model than in the plan") {
    CHECK_THROWS_WITH(start_bucket_launches(plan, kParams + 1),
                      Catch::StartsWith("bucket plan: parameter 6 is in no bucket"));
  }
}

TEST_CASE("exercise 04.2: the hook refuses a parameter it cannot take, launching nothing", "[ch04][mpi]") {
  Communicator& comm = testing::world();
  const int r = comm.rank();
  const BucketPlan plan = hand_plan();
  Tensor flat = rank_gradient(r);
  BucketLaunchState state = start_bucket_launches(plan, kParams);
  const std::uint64_t c0 = all_reduces(comm);
  INFO("exercise 04.2, rank " << r << ": on_grad_ready must refuse with the contract's message");
  CHECK_THROWS_WITH(on_grad_ready(state, 6, comm, flat),
                    Catch::StartsWith("on_grad_ready: parameter 6 is not one of the model's 6 parameters"));
  CHECK_THROWS_WITH(on_grad_ready(state, -1, comm, flat),
                    Catch::StartsWith("on_grad_ready: parameter -1 is not one of the model's 6 parameters"));
  on_grad_ready(state, 5, comm, flat);
  CHECK_THROWS_WITH(on_grad_ready(state, 5, comm, flat),
                    Catch::StartsWith("on_grad_ready: parameter 5 reported ready twice"));
  CHECK(state.launched.empty());
  // A buffer shorter than the plan: bucket 0 ends at 16.
  Tensor short_flat = flat.slice(0, kElements - 1);
  CHECK_THROWS_WITH(on_grad_ready(state, 4, comm, short_flat),
                    Catch::StartsWith("on_grad_ready: flat_grad has 15 elements, bucket 0 ends at 16"));
  CHECK(state.launched.empty());
  CHECK(all_reduces(comm) == c0);
}

TEST_CASE("exercise 04.2: a gradient never reported: the launched buckets complete, then the error names it",
          "[ch04][mpi]") {
  Communicator& comm = testing::world();
  const int n = comm.size(), r = comm.rank();
  const BucketPlan plan = hand_plan();
  struct Case {
    std::vector<int> ready;  // the gradients reported, in order
    std::string error;       // finish_bucket_launches's message
    std::vector<std::pair<std::int64_t, std::int64_t>> averaged;  // the ranges launched, then waited for
  };
  const Case cases[] = {
      {{5, 4, 3, 1}, "bucketing: 2 of 3 buckets launched by the end of backward; bucket 2 waits for parameters 2, 0",
       {{6, kElements}}},
      {{3, 2, 1, 0}, "bucketing: 0 of 3 buckets launched by the end of backward; bucket 0 waits for parameters 5, 4",
       {}},
  };
  for (const Case& c : cases) {
    Tensor flat = rank_gradient(r);
    BucketLaunchState state = start_bucket_launches(plan, kParams);
    for (const int p : c.ready) on_grad_ready(state, p, comm, flat);
    INFO("exercise 04.2, rank " << r << ": finish_bucket_launches after " << c.ready.size()
                                << " gradients: the launched buckets waited for, then \"" << c.error << "\"");
    CHECK_THROWS_WITH(finish_bucket_launches(state), Catch::StartsWith(c.error));
    CHECK(state.launched.empty());
    // Nothing was left in flight: the launched buckets averaged, the others untouched.
    CHECK(elementwise_mismatch(flat.to_floats(), expected(n, r, c.averaged), Tolerance::exact(), r) == "");
  }
}
