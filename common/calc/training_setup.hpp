// TrainingSetup: the training configuration the analytic calculator evaluates (usp_calc, the
// memory chapters' "formula" columns, the analytic plots): a model shape, the batch geometry,
// the number format, the recomputation mode and the parallel layout.
//
//   s seq (tokens per sequence), b mbs (micro-batch size), dp N_d with ZeRO stage 0..3,
//   tp t (Megatron tensor parallelism, optionally with sequence parallelism sp),
//   cp c (context parallelism: the sequence split over c ranks), pp p (pipeline stages),
//   ep (expert parallelism: a mixture of experts' experts spread over ep of the dp·cp ranks).
#pragma once
#include <cstdint>
#include <string>

#include "common/model/config.hpp"

namespace usp::calc {

// fp32: everything in 4 bytes (parameters, gradients, Adam m and v, activations).
// mixed: bf16 parameters, gradients and activations, with fp32 master weights and Adam states.
enum class Precision { fp32, mixed };
const char* precision_name(Precision p);
Precision parse_precision(const std::string& s);  // "fp32" | "mixed"; UsageError otherwise

// How the ranks are arranged (a sweep varies just this part of a setup).
struct ParallelLayout {
  std::int64_t dp = 1;
  int zero = 0;
  std::int64_t tp = 1;
  bool sp = false;
  std::int64_t cp = 1;
  std::int64_t pp = 1;
  std::int64_t ep = 1;
  // Which pipeline stage the per-rank numbers are for (0 .. pp-1): stage k runs floor(L/p)
  // layers plus one when k < L mod p, the first adds the embedding, the last (p > 1) the final
  // norm and the head. The default, the first stage, holds the most activations.
  std::int64_t stage = 0;
};

// A setup is a layout (setup.dp, setup.tp, ...) plus the model, batch, format and recomputation.
struct TrainingSetup : ParallelLayout {
  ModelConfig model;
  std::int64_t seq = 4096;
  std::int64_t mbs = 1;
  Precision precision = Precision::mixed;
  Recompute recompute = Recompute::none;
  bool fp32_grad_accum = false;  // mixed only: an extra fp32 gradient buffer (4N)

  // Throws UsageError naming the first impossible choice: sizes < 1, ZeRO stage outside 0..3,
  // tp not dividing the heads / ffn or not compatible with the kv heads, seq not divisible by
  // cp (or by tp under sp), pp > layers, --fp32-grad-accum without mixed precision, ep > 1 on a
  // dense model, ep not dividing the experts or the dp·cp ranks.
  void validate() const;

  // Bytes of one activation element: 2 (bf16) in mixed precision, 4 in fp32.
  std::int64_t activation_element_bytes() const { return precision == Precision::mixed ? 2 : 4; }
};

}  // namespace usp::calc
