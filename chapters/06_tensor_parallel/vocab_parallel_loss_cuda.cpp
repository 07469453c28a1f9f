#include "chapters/06_tensor_parallel/vocab_parallel_loss_cuda.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"
#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ch06 {

#if defined(USP_HAVE_CUDA)

double vocab_parallel_cross_entropy_cuda(Communicator& tp, const Tensor& logits, const Tensor& targets,
                                         std::int64_t vocab_begin, Tensor& lse) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1) * tp.size();
  const Device dev = logits.device();
  // Checked on every rank alike, before any communication.
  const Tensor ids = on_device(targets, Device::cpu());
  for (std::int64_t n = 0; n < N; ++n)
    if (const std::int32_t id = ids.data<std::int32_t>()[n]; id < 0 || id >= V)
      throw Error("vocab_parallel_cross_entropy: target " + std::to_string(id) + " at row " + std::to_string(n) +
                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
  const Tensor tg = on_device(targets, dev);  // the model hands its batch there; a test may not

  // 1. Each row's max over the whole vocabulary.
  Tensor row_max = Tensor::empty({N}, DType::f32, MemCategory::Temporary, dev);
  ops::cuda_path::vocab_shard_row_max(logits, row_max);
  tp.all_reduce(row_max, ReduceOp::max);
  // 2. Σ exp(z - m) over my columns and 3. the target's logit (0 unless I hold it), each summed
  // over the group.
  Tensor sum_exp = Tensor::empty({N}, DType::f32, MemCategory::Temporary, dev);
  Tensor target_logit = Tensor::empty({N}, DType::f32, MemCategory::Temporary, dev);
  ops::cuda_path::vocab_shard_sum_exp(logits, tg, vocab_begin, row_max, sum_exp, target_logit);
  tp.all_reduce(sum_exp);
  tp.all_reduce(target_logit);

  // lse_n = m_n + log s_n; the loss is the mean of lse_n - z_n,target.
  const std::vector<float> m = row_max.to_floats(), s = sum_exp.to_floats(), zt = target_logit.to_floats();
  std::vector<float> l(static_cast<std::size_t>(N));
  double total = 0.0;
  for (std::size_t n = 0; n < l.size(); ++n) {
    const double lse_n = m[n] + std::log(static_cast<double>(s[n]));
    l[n] = static_cast<float>(lse_n);
    total += lse_n - zt[n];
  }
  lse = Tensor::empty({N}, DType::f32, MemCategory::Activation, dev);
  lse.copy_from(Tensor::from_floats(l, {N}));
  return total / static_cast<double>(N);
}

void vocab_parallel_cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, std::int64_t vocab_begin,
                                                const Tensor& lse, Tensor& dlogits, float scale) {
  ops::cuda_path::vocab_shard_cross_entropy_backward(logits, on_device(targets, logits.device()), vocab_begin, lse, dlogits,
                                                     scale);
}

#else

double vocab_parallel_cross_entropy_cuda(Communicator&, const Tensor&, const Tensor&, std::int64_t, Tensor&) {
  throw Error("vocab_parallel_cross_entropy_cuda: this build has no CUDA (configure with -DUSP_CUDA=ON)");
}
void vocab_parallel_cross_entropy_backward_cuda(const Tensor&, const Tensor&, std::int64_t, const Tensor&, Tensor&,
                                                float) {
  throw Error("vocab_parallel_cross_entropy_backward_cuda: this build has no CUDA (configure with -DUSP_CUDA=ON)");
}

#endif

}  // namespace usp::ch06
