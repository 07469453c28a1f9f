// Tensor: shapes, views sharing storage, copies, dtypes.
#include <catch2/catch.hpp>

#include "common/tensor.hpp"

using namespace usp;

TEST_CASE("a tensor knows its shape, size and dtype", "[core][tensor]") {
  Tensor t = Tensor::zeros({2, 3, 4});
  CHECK(t.defined());
  CHECK(t.ndim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.nbytes() == 96);
  CHECK(t.dim(-1) == 4);
  CHECK(t.dtype() == DType::f32);
  CHECK(t.device() == Device::cpu());
  CHECK(t.category() == MemCategory::Temporary);
  for (float v : t.to_floats()) CHECK(v == 0.0f);
  CHECK_THROWS_AS(t.dim(3), Error);
  CHECK_FALSE(Tensor().defined());
  CHECK_THROWS_AS(Tensor().raw(), Error);
}

TEST_CASE("views share storage with their base", "[core][tensor]") {
  Tensor flat = Tensor::from_floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {12});
  Tensor bucket = flat.view(4, {2, 3});  // elements 4..9
  CHECK(bucket.shares_storage_with(flat));
  CHECK(bucket.offset() == 4);
  CHECK(bucket.to_floats() == std::vector<float>{4, 5, 6, 7, 8, 9});

  bucket.data<float>()[0] = -1;  // writing the view writes the base
  CHECK(flat.to_floats()[4] == -1);

  Tensor rows = bucket.slice(1, 2);  // a view of a view
  CHECK(rows.shape() == Shape{1, 3});
  CHECK(rows.to_floats() == std::vector<float>{7, 8, 9});
  CHECK(rows.shares_storage_with(flat));

  CHECK(flat.reshape({3, -1}).shape() == Shape{3, 4});
  CHECK_THROWS_AS(flat.reshape({5, -1}), Error);
  CHECK_THROWS_AS(flat.view(8, {5}), Error);
  CHECK_THROWS_AS(bucket.slice(1, 3), Error);
}

TEST_CASE("clone and copy_from copy; data<T> checks the type", "[core][tensor]") {
  Tensor a = Tensor::from_floats({1, 2, 3}, {3});
  Tensor b = a.clone(MemCategory::Activation);
  CHECK_FALSE(b.shares_storage_with(a));
  CHECK(b.category() == MemCategory::Activation);
  a.fill(7);
  CHECK(b.to_floats() == std::vector<float>{1, 2, 3});
  b.copy_from(a);
  CHECK(b.to_floats() == std::vector<float>{7, 7, 7});
  CHECK_THROWS_AS(b.copy_from(Tensor::zeros({4})), Error);
  CHECK_THROWS_AS(a.data<std::int32_t>(), Error);
  CHECK_NOTHROW(Tensor::zeros({2}, DType::i32).data<std::int32_t>());
}

TEST_CASE("low-precision tensors store their own bytes and convert on the way out", "[core][tensor]") {
  Tensor h = Tensor::from_floats({1.0f, -2.5f, 0.09375f}, {3}, DType::bf16);
  CHECK(h.nbytes() == 6);
  CHECK(h.data<std::uint16_t>()[0] == 0x3F80);  // bf16 1.0 = the top half of f32 1.0
  CHECK(h.to_floats() == std::vector<float>{1.0f, -2.5f, 0.09375f});
  Tensor q = Tensor::from_floats({448.0f, 1000.0f}, {2}, DType::e4m3);
  CHECK(q.nbytes() == 2);
  CHECK(q.to_floats() == std::vector<float>{448.0f, 448.0f});  // saturated, not inf
}
