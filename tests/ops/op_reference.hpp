// The ops tests' oracles: naive double-precision forwards written straight from the formulas in
// ops.hpp, central finite differences of a double-precision loss, and value helpers.
//
// Every test feeds the op and the reference the same inputs: values are rounded to f32 (or to
// bf16) first, so the only difference left is the op's own f32 arithmetic.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/tensor.hpp"

namespace usp::opstest {

using Vec = std::vector<double>;

// n values uniform in [lo, hi), deterministic in seed, rounded to what dtype can hold.
Vec random_values(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0,
                  DType dtype = DType::f32);
// Values rounded to dtype (f32, bf16 or f16) and back.
Vec rounded(const Vec& v, DType dtype);
// A CPU tensor holding v (converted to dtype), and a tensor's values as doubles.
Tensor tensor_of(const Vec& v, const Shape& shape, DType dtype = DType::f32,
                 MemCategory category = MemCategory::Activation);
Tensor int_tensor(const std::vector<std::int32_t>& v, const Shape& shape);
// The positions first, first + 1, ..., first + n - 1 (of n tokens in a sequence).
std::vector<std::int32_t> iota_positions(std::int64_t n, std::int32_t first = 0);
Vec values_of(const Tensor& t);

double weighted_sum(const Vec& r, const Vec& y);  // Σ r·y
double max_abs(const Vec& v);
// Largest |got - want| / scale; scale = max(max|want|, floor). The tests compare this to a
// tolerance relative to the result's magnitude.
double max_rel_error(const Vec& got, const Vec& want, double floor = 1e-3);
// Distance in bf16 steps between two bf16-representable values of the same sign (0 when equal).
int bf16_ulps_apart(float a, float b);

// Central finite differences of loss at x for the listed indices (all when empty):
// (loss(x + h e_i) - loss(x - h e_i)) / 2h, in double. Indices not listed are left 0.
Vec fd_gradient(const std::function<double(const Vec&)>& loss, const Vec& x, double h,
                const std::vector<std::size_t>& indices = {});
// count distinct indices in [0, n), deterministic in seed (all of them when count >= n).
std::vector<std::size_t> some_indices(std::size_t n, std::size_t count, std::uint64_t seed);

// ---- the references ----------------------------------------------------------------------
// y [n, out] = x [n, in] · w [out, in]ᵀ
Vec ref_matmul(const Vec& x, const Vec& w, std::int64_t n, std::int64_t in, std::int64_t out);
// table [V, C] rows tokens
Vec ref_embedding(const std::vector<std::int32_t>& tokens, const Vec& table, std::int64_t c);
// y [n, c] = x / sqrt(mean(x²) + eps) · w; rstd [n] when non-null
Vec ref_rmsnorm(const Vec& x, const Vec& w, std::int64_t n, std::int64_t c, double eps, Vec* rstd = nullptr);
// x [B, T, H, D] rotated by angle t · theta^(-2i/D) (rotate-half); inverse rotates back.
Vec ref_rope(const Vec& x, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d, double theta,
             bool inverse = false);
// out [B, T, H, D] from q [B, T, H, D], k, v [B, T, G, D]; probs [B, H, T, T] when non-null.
Vec ref_attention(const Vec& q, const Vec& k, const Vec& v, std::int64_t b, std::int64_t t, std::int64_t h,
                  std::int64_t g, std::int64_t d, Vec* probs = nullptr);
// z = silu(g) · u
Vec ref_swiglu(const Vec& g, const Vec& u);
// mean over rows of logsumexp(row) - row[target]
double ref_cross_entropy(const Vec& logits, const std::vector<std::int32_t>& targets, std::int64_t v);

}  // namespace usp::opstest
