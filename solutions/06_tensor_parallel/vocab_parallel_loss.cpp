// Exercise 06.2, solution: the vocabulary-parallel cross-entropy
// (the contract and the idea: chapters/06_tensor_parallel/vocab_parallel_loss.hpp).
#include "chapters/06_tensor_parallel/vocab_parallel_loss.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.hpp"

namespace usp::ch06 {

namespace {

// Row n of logits [N, V_r] widened to fp32 into row (bf16 logits are rounded values of fp32 ones).
void read_row(const Tensor& logits, std::int64_t n, std::vector<float>& row) {
  const std::int64_t V = logits.dim(1);
  row.resize(static_cast<std::size_t>(V));
  const std::size_t esize = dtype_size(logits.dtype());
  convert_to_float(logits.dtype(), static_cast<const char*>(logits.raw()) + static_cast<std::size_t>(n * V) * esize,
                   row.data(), static_cast<std::size_t>(V));
}

}  // namespace

double vocab_parallel_cross_entropy(Communicator& tp, const Tensor& logits, const Tensor& targets,
                                    std::int64_t vocab_begin, Tensor& lse) {
  const std::int64_t N = logits.dim(0), V_r = logits.dim(1), V = V_r * tp.size();
  const std::int32_t* tg = targets.data<std::int32_t>();
  for (std::int64_t n = 0; n < N; ++n)  // checked on every rank alike, before any communication
    if (tg[n] < 0 || tg[n] >= V)
      throw Error("vocab_parallel_cross_entropy: target " + std::to_string(tg[n]) + " at row " + std::to_string(n) +
                  " is outside the vocabulary [0, " + std::to_string(V) + ")");

  // 1. Each row's max over the whole vocabulary.
  Tensor row_max = Tensor::empty({N}, DType::f32, MemCategory::Temporary, tp.device());
  float* m = row_max.data<float>();
  std::vector<float> row;
  for (std::int64_t n = 0; n < N; ++n) {
    read_row(logits, n, row);
    m[n] = -std::numeric_limits<float>::infinity();
    for (float z : row) m[n] = std::max(m[n], z);
  }
  tp.all_reduce(row_max, ReduceOp::max);

  // 2. Σ exp(z - m) over my columns, summed over the group; 3. the target's logit (0 unless I
  // hold its column), summed over the group.
  Tensor sum_exp = Tensor::empty({N}, DType::f32, MemCategory::Temporary, tp.device());
  Tensor target_logit = Tensor::empty({N}, DType::f32, MemCategory::Temporary, tp.device());
  float* s = sum_exp.data<float>();
  float* zt = target_logit.data<float>();
  for (std::int64_t n = 0; n < N; ++n) {
    read_row(logits, n, row);
    double acc = 0.0;
    for (float z : row) acc += std::exp(static_cast<double>(z) - m[n]);
    s[n] = static_cast<float>(acc);
    const std::int64_t local = tg[n] - vocab_begin;
    zt[n] = (local >= 0 && local < V_r) ? row[static_cast<std::size_t>(local)] : 0.0f;
  }
  tp.all_reduce(sum_exp);
  tp.all_reduce(target_logit);

  // lse_n = m_n + log s_n; the loss is the mean of lse_n - z_n,target.
  lse = Tensor::empty({N}, DType::f32, MemCategory::Activation, logits.device());
  float* l = lse.data<float>();
  double total = 0.0;
  for (std::int64_t n = 0; n < N; ++n) {
    const double lse_n = m[n] + std::log(static_cast<double>(s[n]));
    l[n] = static_cast<float>(lse_n);
    total += lse_n - zt[n];
  }
  return total / static_cast<double>(N);
}

void vocab_parallel_cross_entropy_backward(const Tensor& logits, const Tensor& targets, std::int64_t vocab_begin,
                                           const Tensor& lse, Tensor& dlogits, float scale) {
  const std::int64_t N = logits.dim(0), V_r = logits.dim(1);
  const std::int32_t* tg = targets.data<std::int32_t>();
  const float* l = lse.data<float>();
  float* d = dlogits.data<float>();
  const float k = scale / static_cast<float>(N);
  std::vector<float> row;
  for (std::int64_t n = 0; n < N; ++n) {
    read_row(logits, n, row);
    float* dn = d + n * V_r;
    for (std::int64_t v = 0; v < V_r; ++v) dn[v] = k * std::exp(row[static_cast<std::size_t>(v)] - l[n]);
    const std::int64_t local = tg[n] - vocab_begin;
    if (local >= 0 && local < V_r) dn[local] -= k;
  }
}

}  // namespace usp::ch06
