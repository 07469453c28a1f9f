// embedding: a row gather, and its scatter-add backward (repeated tokens add up).
#include <catch2/catch.hpp>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

TEST_CASE("embedding_forward gathers table rows", "[ops][embedding]") {
  const std::int64_t vocab = 11, c = 9;
  const std::vector<std::int32_t> tokens = {3, 0, 10, 3, 7, 7, 1};
  const Vec table = random_values(vocab * c, 11);
  Tensor out = Tensor::empty({7, c});
  ops::embedding_forward(int_tensor(tokens, {7}), tensor_of(table, {vocab, c}), out);
  CHECK(values_of(out) == ref_embedding(tokens, table, c));  // a copy: exact

  SECTION("tokens [B, T] and out [B, T, C]") {
    Tensor out3 = Tensor::empty({1, 7, c});
    ops::embedding_forward(int_tensor(tokens, {1, 7}), tensor_of(table, {vocab, c}), out3);
    CHECK(values_of(out3) == ref_embedding(tokens, table, c));
  }
}

TEST_CASE("embedding_backward accumulates dout into the tokens' rows", "[ops][embedding]") {
  const std::int64_t vocab = 6, c = 5;
  const std::vector<std::int32_t> tokens = {2, 5, 2, 0, 2};
  const Vec r = random_values(tokens.size() * c, 12), table = random_values(vocab * c, 13);
  const Vec dtable0 = random_values(vocab * c, 14);
  auto loss = [&](const Vec& tv) { return weighted_sum(r, ref_embedding(tokens, tv, c)); };
  // The loss is linear in the table: central differences are exact up to ~1e-16·|L|/h.
  const Vec want = fd_gradient(loss, table, 1e-3);

  Tensor dtable = tensor_of(dtable0, {vocab, c});
  ops::embedding_backward(int_tensor(tokens, {5}), tensor_of(r, {5, c}), dtable);
  Vec added = values_of(dtable);
  for (std::size_t i = 0; i < added.size(); ++i) added[i] -= dtable0[i];
  // f32 sums of at most 3 values of magnitude <= 1 on top of dtable0: a few 2^-24 each.
  CHECK(max_rel_error(added, want) < 1e-6);
}

TEST_CASE("embedding rejects a token outside the vocabulary and writes nothing", "[ops][embedding]") {
  Tensor table = tensor_of(random_values(4 * 3, 15), {4, 3});
  Tensor out = Tensor::zeros({3, 3});
  CHECK_THROWS_AS(ops::embedding_forward(int_tensor({0, 4, 1}, {3}), table, out), Error);
  CHECK_THROWS_WITH(ops::embedding_forward(int_tensor({0, 1, -1}, {3}), table, out),
                    Catch::Contains("token -1") && Catch::Contains("[0, 4)"));
  CHECK(values_of(out) == Vec(9, 0.0));
  Tensor dtable = Tensor::zeros({4, 3});
  CHECK_THROWS_AS(ops::embedding_backward(int_tensor({4, 0, 0}, {3}), out, dtable), Error);
  CHECK(values_of(dtable) == Vec(12, 0.0));
}
