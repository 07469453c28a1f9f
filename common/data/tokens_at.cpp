#include "common/data/tokens_at.hpp"

#include <utility>

namespace usp {

Batch tokens_at(const Batch& batch, const std::vector<std::int32_t>& positions) {
  const std::int64_t B = batch.inputs.dim(0), T = batch.inputs.dim(1);
  const std::int64_t n = static_cast<std::int64_t>(positions.size());
  Batch out{Tensor::empty({B, n}, DType::i32), Tensor::empty({B, n}, DType::i32)};
  for (auto [from, to] : {std::pair{&batch.inputs, &out.inputs}, std::pair{&batch.targets, &out.targets}}) {
    const std::int32_t* src = from->data<std::int32_t>();
    std::int32_t* dst = to->data<std::int32_t>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < n; ++j) dst[b * n + j] = src[b * T + positions[static_cast<std::size_t>(j)]];
  }
  return out;
}

}  // namespace usp
