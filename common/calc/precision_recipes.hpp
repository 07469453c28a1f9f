// The training-state bytes per parameter of the precision recipes the playbook compares in its
// "FP8 pretraining" section: for each recipe, the format of each copy it keeps per parameter, and
// the bytes they add up to. The formats are the table's; the bytes come from the formats
// (format_bytes), and each row also carries the total the playbook states, so a test can check
// that the two agree. Three rows describe recipes the calculator's own state_bytes_per_parameter
// covers (bf16 mixed precision with and without an fp32 accumulation buffer; fp32 states with FP8
// GEMMs, Transformer Engine's): the test checks those copy by copy.
//
//   recipe                      GEMM  master  accum  weights  grads  Adam m + v    bytes
//   bf16 + fp32 mixed precision bf16  fp32    fp32   bf16     bf16   fp32 + fp32   20
//   ... without fp32 grad accum bf16  fp32    -      bf16     bf16   fp32 + fp32   16
//   Transformer Engine          fp8   -       -      fp32     fp32   fp32 + fp32   16
//   FP8-LM (level O3)           fp8   fp16    fp16   fp8      fp8    fp8 + fp16     9
//   DeepSeek-V3                 fp8   fp32    fp32   fp8      bf16   bf16 + bf16   15
//   nanotron FP8                fp8   bf16    fp32   fp8      fp8    fp8 + fp8     10
//
// These are the states only (activations and temporaries excluded), before any ZeRO sharding.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp::calc {

// Bytes per element of a format named as in the table: "fp32" 4, "fp16"/"bf16" 2, "fp8" 1,
// "" (no such copy) 0. Throws Error for another name.
int format_bytes(const std::string& format);

struct PrecisionRecipe {
  std::string name, gemm;
  // The format of each copy kept per parameter ("" where the recipe keeps none).
  std::string master_weights, accumulated_gradients, weights, gradients, adam_first, adam_second;
  int playbook_total = 0;  // the total the playbook's table states

  int optimizer_bytes() const;  // master weights + the two moments
  int total_bytes() const;      // from the formats
};

const std::vector<PrecisionRecipe>& playbook_precision_recipes();

}  // namespace usp::calc
