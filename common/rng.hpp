// Counter-based random numbers: the value at (seed, name, index) is a pure function of the
// three, with no state. That is what lets a TP/PP/ZeRO shard initialise exactly its slice of
// the unsharded tensor: shard element j of a tensor named "layers.3.mlp.up" draws index
// (shard offset + j) and gets the same number the single-rank run drew.
//
// Generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11). Key = the 64-bit mix of seed and the FNV-1a hash of name; counter = index.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/hostdevice.hpp"

namespace usp::rng {

struct Key {
  std::uint32_t lo, hi;
};
struct Block {
  std::uint32_t v[4];
};

// FNV-1a, 64-bit.
constexpr std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// splitmix64 finaliser: spreads seed and name over the key's bits.
USP_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

USP_HD Key make_key(std::uint64_t seed, std::uint64_t name_hash) {
  const std::uint64_t k = mix64(seed ^ mix64(name_hash));
  return {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
}

USP_HD Block philox4x32_10(std::uint64_t counter, Key key) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter), c1 = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t c2 = 0, c3 = 0;
  std::uint32_t k0 = key.lo, k1 = key.hi;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = 0xD2511F53ull * c0;
    const std::uint64_t p1 = 0xCD9E8D57ull * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = static_cast<std::uint32_t>(p1);
    c2 = n2;
    c3 = static_cast<std::uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in (0, 1): 24 random bits, centred in their interval, never 0 or 1.
USP_HD float to_unit(std::uint32_t bits) {
  return (static_cast<float>(bits >> 8) + 0.5f) * (1.0f / 16777216.0f);
}

USP_HD float uniform(Key key, std::uint64_t index) { return to_unit(philox4x32_10(index, key).v[0]); }

// Standard normal by Box-Muller on the block's first two words.
USP_HD float normal(Key key, std::uint64_t index) {
  const Block b = philox4x32_10(index, key);
  const float u1 = to_unit(b.v[0]), u2 = to_unit(b.v[1]);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}

// Convenience for host code: the value of (seed, name, index).
inline float uniform(std::uint64_t seed, std::string_view name, std::uint64_t index) {
  return uniform(make_key(seed, hash_name(name)), index);
}
inline float normal(std::uint64_t seed, std::string_view name, std::uint64_t index) {
  return normal(make_key(seed, hash_name(name)), index);
}

// The values of (seed, name, 0 .. n-1) as a vector: n draws of N(0, 1), the test data of a
// kernel comparison (chapters 12 and 14: a tensor's elements in row-major order).
inline std::vector<float> normal_values(std::uint64_t seed, std::string_view name, std::int64_t n) {
  const Key key = make_key(seed, hash_name(name));
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = normal(key, i);
  return v;
}

}  // namespace usp::rng
