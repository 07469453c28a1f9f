#include "chapters/07_context_parallel/cp_mesh_layout.hpp"

#include "common/error.hpp"
#include "common/model/params.hpp"

namespace usp::ch07 {

std::string CpLayout::label() const {
  const std::string s = std::string(attention_name(attention)) + " " + sharding_name(sharding);
  std::string mesh = "CP " + std::to_string(cp);
  if (tp > 1) mesh += " × TP " + std::to_string(tp);
  return (dp > 1 ? "DP " + std::to_string(dp) + " × " + mesh : mesh) + " " + s;
}

void check_cp_layout(const CpLayout& layout, int world_size, const ModelConfig& model, std::int64_t seq) {
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (layout.dp < 1 || layout.cp < 1 || layout.tp < 1)
    throw UsageError("--dp, --cp and --tp must be >= 1 (got dp " + str(layout.dp) + ", cp " + str(layout.cp) +
                     ", tp " + str(layout.tp) + ")");
  if (layout.world() != world_size)
    throw UsageError("the mesh dp " + str(layout.dp) + " × cp " + str(layout.cp) +
                     (layout.tp > 1 ? " × tp " + str(layout.tp) : std::string()) + " = " + str(layout.world()) +
                     " ranks does not match the " + str(world_size) + " ranks of this run");
  check_tp_shard(model, TpShard{layout.tp, 0});  // chapter 06's split: t divides heads, kv heads, ffn, vocab
  const int cp = layout.cp;
  if (layout.sharding == CpSharding::zigzag && seq % (2 * cp) != 0)
    throw UsageError("zig-zag context parallelism cuts each sequence into 2·cp chunks: seq " + str(seq) +
                     " is not divisible by 2·cp = " + str(2 * cp));
  if (layout.sharding == CpSharding::contiguous && seq % cp != 0)
    throw UsageError("contiguous context parallelism cuts each sequence into cp chunks: seq " + str(seq) +
                     " is not divisible by cp = " + str(cp));
  const std::int64_t heads = model.heads / layout.tp, kv_heads = model.kv_heads / layout.tp;
  if (layout.attention == CpAttention::all_to_all)
    check_head_split(cp, heads, kv_heads, layout.tp > 1 ? " per TP rank" : "");
}

}  // namespace usp::ch07
