// add_inplace and scale_inplace: exact (one f32 operation per element, same as the reference).
#include <catch2/catch.hpp>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

TEST_CASE("add_inplace adds element-wise over the same number of elements", "[ops][elementwise]") {
  const Vec a = random_values(35, 51), b = random_values(35, 52);
  Tensor y = tensor_of(a, {5, 7});
  ops::add_inplace(y, tensor_of(b, {35}));  // shapes may differ, numel may not
  const Vec got = values_of(y);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(got[i] == static_cast<double>(static_cast<float>(a[i]) + static_cast<float>(b[i])));
  CHECK_THROWS_AS(ops::add_inplace(y, tensor_of(b, {5, 7}).slice(0, 4)), Error);
}

TEST_CASE("scale_inplace multiplies every element", "[ops][elementwise]") {
  const Vec a = random_values(19, 53);
  Tensor y = tensor_of(a, {19});
  ops::scale_inplace(y, 0.37f);
  const Vec got = values_of(y);
  for (std::size_t i = 0; i < a.size(); ++i)
    CHECK(got[i] == static_cast<double>(static_cast<float>(a[i]) * 0.37f));
}
