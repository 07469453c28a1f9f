#include "chapters/06_tensor_parallel/tp_layout.hpp"

#include "common/error.hpp"
#include "common/model/params.hpp"

namespace usp::ch06 {

std::string TpLayout::label() const {
  std::string s = dp > 1 ? "DP " + std::to_string(dp) + " × TP " + std::to_string(tp) : "TP " + std::to_string(tp);
  return sp ? s + " + SP" : s;
}

void check_tp_layout(const TpLayout& layout, int world_size, const ModelConfig& model, std::int64_t mbs,
                     std::int64_t seq) {
  if (layout.dp < 1 || layout.tp < 1)
    throw UsageError("--dp and --tp must be >= 1 (got dp " + std::to_string(layout.dp) + ", tp " +
                     std::to_string(layout.tp) + ")");
  if (layout.world() != world_size)
    throw UsageError("the mesh dp " + std::to_string(layout.dp) + " × tp " + std::to_string(layout.tp) + " = " +
                     std::to_string(layout.world()) + " ranks does not match the " + std::to_string(world_size) +
                     " ranks of this run");
  if (layout.sp && layout.tp == 1)
    throw UsageError("sequence parallelism splits the stream over the tensor-parallel ranks: --sp needs --tp > 1");
  check_tp_shard(model, TpShard{layout.tp, 0});
  if (layout.sp && (mbs * seq) % layout.tp != 0)
    throw UsageError("sequence parallelism splits each micro-batch's mbs × seq = " + std::to_string(mbs * seq) +
                     " tokens over t = " + std::to_string(layout.tp) + " ranks: t must divide them");
}

}  // namespace usp::ch06
