// The per-rank state of each ZeRO stage, counted from the model's layout (see state_bytes.hpp).
#include "chapters/05_zero/state_bytes.hpp"

#include <vector>

#include "common/error.hpp"
#include "common/model/params.hpp"
#include "chapters/05_zero/shard_layout.hpp"

namespace usp::ch05 {

StateBytes zero_state_bytes(const ModelConfig& model, DType dtype, int stage, int ranks, int rank,
                            bool fp32_grad_accum) {
  USP_CHECK(stage >= 0 && stage <= 3, "zero_state_bytes: stage " + std::to_string(stage));
  const auto b = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t g = b + (fp32_grad_accum ? 4 : 0);
  const std::int64_t k = 8 + (dtype == DType::f32 ? 0 : 4);
  const std::int64_t psi = model.num_parameters();
  StateBytes s;
  if (stage == 0) {
    s = {b * psi, g * psi, k * psi};
  } else if (stage == 1) {
    const Shard sh = shard_of(psi, ranks, rank);
    s = {b * ranks * sh.size, g * ranks * sh.size, k * sh.owned};
  } else {
    // Units: the parameters of each unit are consecutive in the layout.
    std::vector<std::int64_t> unit_numel;
    for (const ParamInfo& p : llama_param_layout(model)) {
      if (static_cast<std::size_t>(p.unit) >= unit_numel.size())
        unit_numel.resize(static_cast<std::size_t>(p.unit) + 1, 0);
      unit_numel[static_cast<std::size_t>(p.unit)] += p.numel;
    }
    for (std::int64_t n : unit_numel) {
      const Shard sh = shard_of(n, ranks, rank);
      s.parameters += b * (stage == 2 ? ranks * sh.size : sh.size);
      s.gradients += g * sh.size;
      s.optimizer += k * sh.owned;
    }
  }
  return s;
}

}  // namespace usp::ch05
