// Cross-entropy: the mean loss against a double log-sum-exp, dlogits against finite differences,
// stability for large logits, and out-of-range targets.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// Each row's Σ e^(x - max) is summed in f32 (exp to ~2 ulp, V <= 300 terms: ~1e-6 relative
// at worst, typically far less), its log taken in double: the loss is off by ~1e-6 absolute
// at most. The loss is O(log V) ~ 5, so 2e-6 relative to it covers that.
constexpr double kLossTol = 2e-6;
constexpr double kGradTol = 2e-6;  // softmax entries in f32: a few 2^-24 relative each
}  // namespace

TEST_CASE("cross_entropy_forward is the mean of logsumexp - logit[target]", "[ops][cross_entropy]") {
  const std::int64_t n = 9, v = 300;
  const Vec logits = random_values(n * v, 61, -4, 4);
  const std::vector<std::int32_t> targets = {0, 299, 5, 17, 17, 123, 250, 1, 64};
  const double got = ops::cross_entropy_forward(tensor_of(logits, {n, v}), int_tensor(targets, {n}));
  const double want = ref_cross_entropy(logits, targets, v);
  CHECK(std::abs(got - want) < kLossTol * std::abs(want));

  SECTION("stable for logits far beyond e^88") {
    Vec big = logits;
    for (double& x : big) x += 1000.0;  // a naive e^x overflows f32 (and double's exp(1000))
    big = rounded(big, DType::f32);
    const double got_big = ops::cross_entropy_forward(tensor_of(big, {n, v}), int_tensor(targets, {n}));
    REQUIRE(std::isfinite(got_big));
    // The op subtracts the row max in f32, exactly (both near 1000), so the error budget is the
    // same as above; the reference sees the same f32-rounded logits.
    const double want_big = ref_cross_entropy(big, targets, v);
    CHECK(std::abs(got_big - want_big) < kLossTol * std::abs(want_big));
  }
}

TEST_CASE("cross_entropy_backward is scale · (softmax - onehot) / N, overwritten", "[ops][cross_entropy]") {
  const std::int64_t n = 4, v = 13;
  const float scale = 0.75f;
  const Vec logits = random_values(n * v, 62, -3, 3);
  const std::vector<std::int32_t> targets = {3, 12, 0, 3};
  auto loss = [&](const Vec& lv) { return scale * ref_cross_entropy(lv, targets, v); };
  // Double central differences, h = 1e-5: truncation h²/6·|f'''| with |f'''| <= 1 is < 1e-10.
  const Vec want = fd_gradient(loss, logits, 1e-5);
  Tensor dl = Tensor::empty({n, v});
  dl.fill(NAN);
  ops::cross_entropy_backward(tensor_of(logits, {n, v}), int_tensor(targets, {n}), dl, scale);
  CHECK(max_rel_error(values_of(dl), want) < kGradTol);

  SECTION("in place: dlogits may be the logits tensor itself") {
    Tensor inplace = tensor_of(logits, {n, v});
    ops::cross_entropy_backward(inplace, int_tensor(targets, {n}), inplace, scale);
    CHECK(values_of(inplace) == values_of(dl));
  }
}

TEST_CASE("cross_entropy rejects a target outside the vocabulary", "[ops][cross_entropy]") {
  Tensor logits = tensor_of(random_values(2 * 5, 63), {2, 5});
  CHECK_THROWS_WITH(ops::cross_entropy_forward(logits, int_tensor({1, 5}, {2})),
                    Catch::Contains("target 5") && Catch::Contains("[0, 5)"));
  Tensor dl = Tensor::zeros({2, 5});
  CHECK_THROWS_AS(ops::cross_entropy_backward(logits, int_tensor({-1, 0}, {2}), dl, 1.0f), Error);
  CHECK(values_of(dl) == Vec(10, 0.0));
  CHECK_THROWS_AS(ops::cross_entropy_forward(logits, int_tensor({1, 2, 3}, {3})), Error);
}
