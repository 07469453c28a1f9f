// No silent wrong answers from non-finite numbers: a NaN loss never "agrees", a diverged run's
// losses are refused by the summary (write_training_summary), a checkpoint holding a NaN weight is
// refused at load naming the tensor, and a capacity that overflows int64 is an error, not a
// negative capacity that drops every token.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/checked_math.hpp"
#include "common/error.hpp"
#include "common/io/checkpoint.hpp"
#include "common/model/config.hpp"
#include "common/model/params.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/loss_agreement.hpp"

namespace fs = std::filesystem;
using namespace usp;

TEST_CASE("a NaN or infinite loss never agrees", "[robustness][non_finite]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> fp32 = {5.5, 5.0, 4.5};
  CHECK(max_loss_gap({5.5, 5.0, 4.5 + 1e-6}, fp32, false) == Approx(1e-6));
  CHECK(max_loss_gap({5.5, nan, 4.5}, fp32, false) == inf);  // std::max(gap, NaN) would keep the gap
  CHECK(max_loss_gap({5.5, 5.0, inf}, fp32, true) == inf);
  CHECK(max_loss_gap(fp32, {5.5, nan, 4.5}, true) == inf);   // a diverged reference agrees with nothing
  CHECK_FALSE(compare_losses({fp32, {5.5, nan, 4.5}}, DType::f32).agree());
  CHECK_FALSE(compare_losses({fp32, {nan, nan, nan}}, DType::bf16).agree());
  CHECK(compare_losses({fp32, fp32}, DType::f32).agree());
}

TEST_CASE("a run whose loss is not finite is an error naming the step", "[robustness][non_finite]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(first_non_finite({1, 2, 3}) == -1);
  CHECK(first_non_finite({1, nan, 3, nan}) == 1);
  CHECK(first_non_finite({1, 2, -std::numeric_limits<double>::infinity()}) == 2);
  CHECK_NOTHROW(require_finite_losses({5.5, 5.0}));
  CHECK_NOTHROW(require_finite_loss(5.5, 3));
  CHECK_THROWS_WITH(require_finite_loss(std::numeric_limits<double>::infinity(), 12, "validation loss"),
                    Catch::Contains("step 12: the validation loss is inf: the training diverged"));
  CHECK_THROWS_WITH(require_finite_losses({5.5, 5.0, nan}, "bf16"),
                    Catch::Contains("step 2 of run 'bf16': the loss is nan: the training diverged"));
  // A fatal failure (exit 1), not a usage error: the flags were fine, the run diverged.
  try {
    require_finite_losses({nan});
    FAIL("no throw");
  } catch (const UsageError&) {
    FAIL("a UsageError");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("step 0") != std::string::npos);
  }
}

TEST_CASE("a checkpoint with a non-finite weight is refused at load, naming the tensor", "[robustness][non_finite]") {
  const fs::path dir = fs::temp_directory_path() / ("usp_nan_ckpt_" + std::to_string(::getpid()));
  const ModelConfig c = ModelConfig::builtin("usp-tiny");
  ParamStore saved(c);
  saved.init(3);
  const std::string name = saved.infos()[2].name;
  saved.param(2).data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  save_checkpoint(dir.string(), saved);
  ParamStore loaded(c);
  CHECK_THROWS_WITH(load_params(dir.string(), loaded),
                    Catch::Contains("model.safetensors holds a non-finite value (nan) in tensor '" + name + "', element 5"));
  saved.param(2).data<float>()[5] = 0.5f;
  save_checkpoint(dir.string(), saved);
  CHECK_NOTHROW(load_params(dir.string(), loaded));
  fs::remove_all(dir);
}

TEST_CASE("an expert capacity beyond 64 bits is an error, not a negative capacity", "[robustness][non_finite]") {
  CHECK(checked_ceil(2.5, "x") == 3);
  CHECK(checked_ceil(-2.5, "x") == -2);
  CHECK_THROWS_AS(checked_ceil(1e300, "the expert capacity"), OverflowError);
  CHECK_THROWS_AS(checked_ceil(9223372036854775808.0, "x"), OverflowError);
  CHECK_THROWS_AS(checked_ceil(std::numeric_limits<double>::quiet_NaN(), "x"), OverflowError);
  ModelConfig moe = ModelConfig::builtin("usp-tiny");
  moe.experts = 4;
  moe.capacity_factor = 4;  // every expert may take every assignment: the largest that means anything
  CHECK_NOTHROW(moe.validate());
  moe.capacity_factor = 1e300;
  CHECK_THROWS_WITH(moe.validate(), Catch::Contains("capacity factor must be at most the number of experts (4)"));
  moe.capacity_factor = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(moe.validate(), UsageError);
}
