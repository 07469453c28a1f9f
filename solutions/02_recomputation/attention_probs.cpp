// Exercise 02.1 (reference): causal grouped-query attention probabilities, one (sample, head,
// query) row at a time: scaled scores against the keys up to the query, then a softmax that
// subtracts the row maximum first, so no exp overflows whatever the scores' size.
#include "chapters/02_recomputation/attention_probs.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace usp::ch02 {

void attention_probs(const Tensor& q, const Tensor& k, Tensor& probs) {
  const bool fit = q.ndim() == 4 && k.ndim() == 4 && k.dim(0) == q.dim(0) && k.dim(1) == q.dim(1) &&
                   k.dim(3) == q.dim(3) && k.dim(2) > 0 && q.dim(2) % k.dim(2) == 0;
  USP_CHECK(fit,
            "attention_probs: q " + shape_str(q.shape()) + " and k " + shape_str(k.shape()) +
                " must be [B, T, H, D] and [B, T, G, D] with G dividing H");
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), G = k.dim(2), D = q.dim(3);
  const Shape expected{B, H, T, T};
  USP_CHECK(probs.dtype() == DType::f32 && probs.shape() == expected,
            "attention_probs: probs is " + shape_str(probs.shape()) + " " + dtype_name(probs.dtype()) +
                ", expected " + shape_str(expected) + " f32");
  const std::vector<float> qf = q.to_floats(), kf = k.to_floats();
  float* p = probs.data<float>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> score(static_cast<std::size_t>(T));  // one row's scores, then its exps

  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < H; ++j) {
      const std::int64_t g = j / (H / G);  // the kv head this query head reads
      for (std::int64_t t = 0; t < T; ++t) {
        const float* qrow = qf.data() + ((b * T + t) * H + j) * D;
        float* row = p + ((b * H + j) * T + t) * T;
        // scores against keys 0..t; later keys are masked: probability 0
        double max_score = -INFINITY;
        for (std::int64_t s = 0; s <= t; ++s) {
          const float* krow = kf.data() + ((b * T + s) * G + g) * D;
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += static_cast<double>(qrow[d]) * krow[d];
          score[static_cast<std::size_t>(s)] = dot * scale;
          max_score = std::max(max_score, dot * scale);
        }
        double sum = 0;
        for (std::int64_t s = 0; s <= t; ++s) {
          double& e = score[static_cast<std::size_t>(s)];
          e = std::exp(e - max_score);
          sum += e;
        }
        for (std::int64_t s = 0; s <= t; ++s) row[s] = static_cast<float>(score[static_cast<std::size_t>(s)] / sum);
        std::fill(row + t + 1, row + T, 0.0f);
      }
    }
}

}  // namespace usp::ch02
