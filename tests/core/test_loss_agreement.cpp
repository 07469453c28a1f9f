// compare_losses: the largest relative difference of any run's loss from the first run's, against
// the precision's tolerance (common/train/loss_agreement.hpp).
#include <catch2/catch.hpp>

#include "common/train/loss_agreement.hpp"

using namespace usp;

TEST_CASE("compare_losses: the largest relative difference from the first run, against the tolerance", "[core]") {
  const LossAgreement same = compare_losses({{5.0, 4.0}, {5.0, 4.0}}, DType::f32);
  CHECK(same.max_relative_difference == 0.0);
  CHECK(same.agree());
  // 4.0004 vs 4.0: 1e-4 relative, exactly the fp32 tolerance; 4.0008 is twice it.
  CHECK(compare_losses({{5.0, 4.0}, {5.0, 4.0004}}, DType::f32).max_relative_difference == Approx(1e-4));
  CHECK_FALSE(compare_losses({{5.0, 4.0}, {5.0, 4.0008}}, DType::f32).agree());
  // bf16 allows one bf16 step of the loss, 2^-8.
  CHECK(compare_losses({{5.0, 4.0}, {5.0, 4.0008}}, DType::bf16).agree());
  CHECK(compare_losses({{4.0}, {4.0}}, DType::bf16).allowed == 1.0 / 256);
  CHECK_THROWS_WITH(compare_losses({{5.0, 4.0}, {5.0}}, DType::f32), Catch::Contains("different numbers of steps"));
}
