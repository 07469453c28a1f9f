// Chapter 11: the two arrangements of the divergence demonstration, on the CPU. The uniform
// one must be a permutation (every element done once) in which every warp takes one branch;
// the divergent one has both branches in every warp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "kernels/divergence/branch_work.hpp"

using namespace usp::divergence;

TEST_CASE("divergence: the uniform arrangement hands out every element exactly once", "[ch11]") {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{63}, std::int64_t{64}, std::int64_t{65},
                               std::int64_t{1000}, std::int64_t{4096}}) {
    INFO("n = " << n);
    const std::int64_t threads = threads_for(n);
    CHECK(threads % (2 * kWarp) == 0);
    CHECK(threads >= n);
    CHECK(threads < n + 2 * kWarp);
    std::vector<int> hits(static_cast<std::size_t>(threads), 0);
    for (std::int64_t t = 0; t < threads; ++t) {
      const std::int64_t e = uniform_element(t);
      REQUIRE(e >= 0);
      REQUIRE(e < threads);
      ++hits[static_cast<std::size_t>(e)];
    }
    for (const int h : hits) REQUIRE(h == 1);
  }
}

TEST_CASE("divergence: uniform warps take one branch, divergent warps take both", "[ch11]") {
  for (std::int64_t warp = 0; warp < 64; ++warp) {
    std::set<std::int64_t> uniform_parities, divergent_parities;
    for (std::int64_t lane = 0; lane < kWarp; ++lane) {
      uniform_parities.insert(uniform_element(warp * kWarp + lane) % 2);
      divergent_parities.insert(divergent_element(warp * kWarp + lane) % 2);
    }
    CHECK(uniform_parities.size() == 1);
    CHECK(divergent_parities.size() == 2);
  }
}

TEST_CASE("divergence: both branches keep [0, 1] in [0, 1] and differ", "[ch11]") {
  for (const float x : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f}) {
    const float a = branch_work(0, x, 256), b = branch_work(1, x, 256);
    CHECK(std::isfinite(a));
    CHECK(std::isfinite(b));
    CHECK(a >= 0.0f);
    CHECK(a <= 1.0f);
    CHECK(b >= 0.0f);
    CHECK(b <= 1.0f);
    CHECK(a != b);
  }
  CHECK(branch_tolerance(256) == Approx(257 * std::ldexp(1.0, -23)));
}
