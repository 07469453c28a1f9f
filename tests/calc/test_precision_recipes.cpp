// The playbook's memory-per-parameter table (common/calc/precision_recipes.hpp): the bytes each
// row's formats add up to equal the total the playbook states; and the rows that describe the
// calculator's own recipes equal state_bytes_per_parameter copy by copy (two independent codings
// of the same recipe: a wrong format in the table or a wrong term in the calculator fails).
#include <catch2/catch.hpp>

#include "common/calc/memory_model.hpp"
#include "common/calc/precision_recipes.hpp"
#include "common/error.hpp"

using namespace usp;
using namespace usp::calc;

TEST_CASE("precision recipes: each row's formats add up to the playbook's total", "[calc]") {
  const auto& recipes = playbook_precision_recipes();
  REQUIRE(recipes.size() == 6);
  const int totals[] = {20, 16, 16, 9, 15, 10};
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    INFO(recipes[i].name);
    CHECK(recipes[i].playbook_total == totals[i]);
    CHECK(recipes[i].total_bytes() == recipes[i].playbook_total);
  }
  CHECK(format_bytes("fp8") == 1);
  CHECK(format_bytes("") == 0);
  CHECK_THROWS_AS(format_bytes("fp64"), Error);
}

TEST_CASE("precision recipes: the calculator's own recipes, copy by copy", "[calc]") {
  const auto& r = playbook_precision_recipes();
  struct Pair {
    const PrecisionRecipe& row;
    StateBytes calc;
  };
  for (const Pair& p : {Pair{r[0], state_bytes_per_parameter(Precision::mixed, true)},
                        Pair{r[1], state_bytes_per_parameter(Precision::mixed, false)},
                        Pair{r[2], state_bytes_per_parameter(Precision::fp32, false)}}) {
    INFO(p.row.name);
    CHECK(p.calc.parameters == format_bytes(p.row.weights));
    CHECK(p.calc.gradients == format_bytes(p.row.gradients) + format_bytes(p.row.accumulated_gradients));
    CHECK(p.calc.optimizer == p.row.optimizer_bytes());
    CHECK(p.calc.master_weights == format_bytes(p.row.master_weights));
  }
}
