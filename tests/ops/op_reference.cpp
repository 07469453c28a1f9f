// Naive double-precision references and finite differences for the ops tests (see
// op_reference.hpp). Deliberately the plainest loops: they are the definition, not fast code.
#include "tests/ops/op_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace usp::opstest {

Vec random_values(std::size_t n, std::uint64_t seed, double lo, double hi, DType dtype) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = dist(gen);
  return rounded(v, dtype);
}

Vec rounded(const Vec& v, DType dtype) {
  std::vector<float> f(v.begin(), v.end());
  std::vector<std::uint16_t> narrow(v.size());
  if (dtype != DType::f32) {
    convert_from_float(f.data(), dtype, narrow.data(), f.size());
    convert_to_float(dtype, narrow.data(), f.data(), f.size());
  }
  return Vec(f.begin(), f.end());
}

Tensor tensor_of(const Vec& v, const Shape& shape, DType dtype, MemCategory category) {
  Tensor t = Tensor::empty(shape, dtype, category);
  std::vector<float> f(v.begin(), v.end());
  if (static_cast<std::int64_t>(f.size()) != t.numel()) throw Error("tensor_of: size does not match shape");
  convert_from_float(f.data(), dtype, t.raw(), f.size());
  return t;
}

Tensor int_tensor(const std::vector<std::int32_t>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::i32, MemCategory::Activation);
  if (static_cast<std::int64_t>(v.size()) != t.numel()) throw Error("int_tensor: size does not match shape");
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(std::int32_t));
  return t;
}

std::vector<std::int32_t> iota_positions(std::int64_t n, std::int32_t first) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = first + static_cast<std::int32_t>(i);
  return p;
}

Vec values_of(const Tensor& t) {
  std::vector<float> f = t.to_floats();
  return Vec(f.begin(), f.end());
}

double weighted_sum(const Vec& r, const Vec& y) {
  double s = 0;
  for (std::size_t i = 0; i < r.size(); ++i) s += r[i] * y[i];
  return s;
}

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

double max_rel_error(const Vec& got, const Vec& want, double floor) {
  if (got.size() != want.size()) return INFINITY;
  const double scale = std::max(max_abs(want), floor);
  double e = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    if (!(d <= e)) e = d;  // NaN wins
  }
  return e / scale;
}

int bf16_ulps_apart(float a, float b) {
  std::uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  if (std::isnan(a) || std::isnan(b)) return 1 << 20;
  if (a == b) return 0;  // includes +0 / -0
  if ((ua ^ ub) & 0x80000000u) return 1 << 20;  // different signs: far apart for our purposes
  const std::int64_t d = static_cast<std::int64_t>(ua >> 16) - static_cast<std::int64_t>(ub >> 16);
  return static_cast<int>(d < 0 ? -d : d);
}

Vec fd_gradient(const std::function<double(const Vec&)>& loss, const Vec& x, double h,
                const std::vector<std::size_t>& indices) {
  Vec grad(x.size(), 0.0);
  Vec xp = x;
  auto one = [&](std::size_t i) {
    const double keep = xp[i];
    xp[i] = keep + h;
    const double up = loss(xp);
    xp[i] = keep - h;
    const double down = loss(xp);
    xp[i] = keep;
    grad[i] = (up - down) / (2 * h);
  };
  if (indices.empty()) {
    for (std::size_t i = 0; i < x.size(); ++i) one(i);
  } else {
    for (std::size_t i : indices) one(i);
  }
  return grad;
}

std::vector<std::size_t> some_indices(std::size_t n, std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  if (count >= n) return all;
  std::mt19937_64 gen(seed);
  std::shuffle(all.begin(), all.end(), gen);
  all.resize(count);
  std::sort(all.begin(), all.end());
  return all;
}

Vec ref_matmul(const Vec& x, const Vec& w, std::int64_t n, std::int64_t in, std::int64_t out) {
  Vec y(static_cast<std::size_t>(n * out), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (std::int64_t p = 0; p < in; ++p) s += x[i * in + p] * w[o * in + p];
      y[i * out + o] = s;
    }
  return y;
}

Vec ref_embedding(const std::vector<std::int32_t>& tokens, const Vec& table, std::int64_t c) {
  Vec out;
  for (std::int32_t tok : tokens)
    for (std::int64_t j = 0; j < c; ++j) out.push_back(table[tok * c + j]);
  return out;
}

Vec ref_rmsnorm(const Vec& x, const Vec& w, std::int64_t n, std::int64_t c, double eps, Vec* rstd) {
  Vec y(x.size());
  if (rstd) rstd->assign(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    double ms = 0;
    for (std::int64_t j = 0; j < c; ++j) ms += x[i * c + j] * x[i * c + j];
    const double r = 1.0 / std::sqrt(ms / static_cast<double>(c) + eps);
    if (rstd) (*rstd)[i] = r;
    for (std::int64_t j = 0; j < c; ++j) y[i * c + j] = x[i * c + j] * r * w[j];
  }
  return y;
}

Vec ref_rope(const Vec& x, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d, double theta,
             bool inverse) {
  Vec y = x;
  const std::int64_t half = d / 2;
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t p = 0; p < t; ++p)
      for (std::int64_t hi = 0; hi < h; ++hi)
        for (std::int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
          const double c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
          const std::int64_t base = ((bi * t + p) * h + hi) * d;
          const double lo = x[base + i], up = x[base + i + half];
          y[base + i] = lo * c - up * s;
          y[base + i + half] = up * c + lo * s;
        }
  return y;
}

Vec ref_attention(const Vec& q, const Vec& k, const Vec& v, std::int64_t b, std::int64_t t, std::int64_t h,
                  std::int64_t g, std::int64_t d, Vec* probs) {
  Vec out(static_cast<std::size_t>(b * t * h * d), 0.0);
  if (probs) probs->assign(static_cast<std::size_t>(b * h * t * t), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Vec score(static_cast<std::size_t>(t));
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t hq = 0; hq < h; ++hq) {
      const std::int64_t hk = hq / (h / g);
      for (std::int64_t i = 0; i < t; ++i) {
        double m = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double s = 0;
          for (std::int64_t e = 0; e < d; ++e)
            s += q[((bi * t + i) * h + hq) * d + e] * k[((bi * t + j) * g + hk) * d + e];
          score[j] = s * scale;
          m = std::max(m, score[j]);
        }
        double z = 0;
        for (std::int64_t j = 0; j <= i; ++j) z += std::exp(score[j] - m);
        for (std::int64_t j = 0; j <= i; ++j) {
          const double p = std::exp(score[j] - m) / z;
          if (probs) (*probs)[((bi * h + hq) * t + i) * t + j] = p;
          for (std::int64_t e = 0; e < d; ++e)
            out[((bi * t + i) * h + hq) * d + e] += p * v[((bi * t + j) * g + hk) * d + e];
        }
      }
    }
  return out;
}

Vec ref_swiglu(const Vec& g, const Vec& u) {
  Vec z(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) z[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return z;
}

double ref_cross_entropy(const Vec& logits, const std::vector<std::int32_t>& targets, std::int64_t v) {
  double total = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const double* row = logits.data() + i * static_cast<std::size_t>(v);
    const double m = *std::max_element(row, row + v);
    double z = 0;
    for (std::int64_t j = 0; j < v; ++j) z += std::exp(row[j] - m);
    total += m + std::log(z) - row[targets[i]];
  }
  return total / static_cast<double>(targets.size());
}

}  // namespace usp::opstest
