#include "common/calc/precision_recipes.hpp"

#include "common/error.hpp"

namespace usp::calc {

int format_bytes(const std::string& format) {
  if (format.empty()) return 0;
  if (format == "fp32") return 4;
  if (format == "fp16" || format == "bf16") return 2;
  if (format == "fp8") return 1;
  throw Error("format_bytes: unknown format '" + format + "'");
}

int PrecisionRecipe::optimizer_bytes() const {
  return format_bytes(master_weights) + format_bytes(adam_first) + format_bytes(adam_second);
}

int PrecisionRecipe::total_bytes() const {
  return optimizer_bytes() + format_bytes(accumulated_gradients) + format_bytes(weights) + format_bytes(gradients);
}

const std::vector<PrecisionRecipe>& playbook_precision_recipes() {
  //      name                                        GEMM    master  accum   weights grads   m       v      total
  static const std::vector<PrecisionRecipe> recipes = {
      {"bf16 + fp32 mixed precision (baseline)", "bf16", "fp32", "fp32", "bf16", "bf16", "fp32", "fp32", 20},
      {"without fp32 gradient accumulation", "bf16", "fp32", "", "bf16", "bf16", "fp32", "fp32", 16},
      {"Transformer Engine", "fp8", "", "", "fp32", "fp32", "fp32", "fp32", 16},
      {"FP8-LM (level O3)", "fp8", "fp16", "fp16", "fp8", "fp8", "fp8", "fp16", 9},
      {"DeepSeek-V3", "fp8", "fp32", "fp32", "fp8", "bf16", "bf16", "bf16", 15},
      {"nanotron FP8", "fp8", "bf16", "fp32", "fp8", "fp8", "fp8", "fp8", 10},
  };
  return recipes;
}

}  // namespace usp::calc
