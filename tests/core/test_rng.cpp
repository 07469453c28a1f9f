// The counter-based RNG: known answers, purity, and the statistics of its outputs.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/rng.hpp"

using namespace usp;

TEST_CASE("Philox4x32-10 matches the published known-answer vectors", "[core][rng]") {
  // Random123's kat_vectors: philox4x32 10 rounds, counter 0 and key 0.
  const rng::Block b = rng::philox4x32_10(0, {0, 0});
  CHECK(b.v[0] == 0x6627e8d5u);
  CHECK(b.v[1] == 0xe169c58du);
  CHECK(b.v[2] == 0xbc57ac4cu);
  CHECK(b.v[3] == 0x9b00dbd8u);
}

TEST_CASE("a value depends only on (seed, name, index)", "[core][rng]") {
  // A shard that starts at element 1000 draws exactly what the full tensor drew there.
  std::vector<float> full(2000), shard(1000);
  for (std::uint64_t i = 0; i < 2000; ++i) full[i] = rng::normal(7, "layers.0.attn.q", i);
  for (std::uint64_t j = 0; j < 1000; ++j) shard[j] = rng::normal(7, "layers.0.attn.q", 1000 + j);
  CHECK(std::equal(shard.begin(), shard.end(), full.begin() + 1000));
  CHECK(rng::normal(8, "layers.0.attn.q", 5) != full[5]);
  CHECK(rng::normal(7, "layers.0.attn.k", 5) != full[5]);
}

TEST_CASE("normal_values are the values at indices 0 .. n-1", "[core][rng]") {
  const std::vector<float> v = rng::normal_values(11, "q", 37);
  REQUIRE(v.size() == 37);
  for (std::uint64_t i = 0; i < v.size(); ++i) CHECK(v[i] == rng::normal(11, "q", i));
  CHECK(rng::normal_values(11, "q", 0).empty());
}

TEST_CASE("uniform and normal outputs have the right moments", "[core][rng]") {
  const int n = 200000;
  double su = 0, su2 = 0, sn = 0, sn2 = 0, sn4 = 0;
  float umin = 1, umax = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng::uniform(1, "u", i);
    const double z = rng::normal(1, "z", i);
    umin = std::min(umin, u);
    umax = std::max(umax, u);
    su += u, su2 += double(u) * u;
    sn += z, sn2 += z * z, sn4 += z * z * z * z;
  }
  CHECK(umin > 0.0f);
  CHECK(umax < 1.0f);
  // Standard errors at n = 2e5: mean of U(0,1) 6.5e-4, of N(0,1) 2.2e-3; 5 sigma bounds.
  CHECK(std::abs(su / n - 0.5) < 5 * 6.5e-4);
  CHECK(std::abs(su2 / n - 1.0 / 3) < 5 * 6.7e-4);
  CHECK(std::abs(sn / n) < 5 * 2.2e-3);
  CHECK(std::abs(sn2 / n - 1) < 5 * 3.2e-3);
  CHECK(std::abs(sn4 / n - 3) < 5 * 2.2e-2);
}
