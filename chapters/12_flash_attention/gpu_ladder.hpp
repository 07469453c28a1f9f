// The attention ladder on a GPU (chapter 12, section 4): kernels/attention's rungs on one causal
// problem — 01 naive forward (S and P in global memory), 02 FlashAttention-1 forward, 03
// FlashAttention-2 forward (out and the log-sum-exp), 04 FlashAttention-2 backward (from 03's out
// and lse), all fp32; 05 and 06 the FlashAttention-2 forward and backward on tensor cores, the
// inputs rounded to bf16.
//   error  largest |GPU - CPU| of each output over its largest |CPU| value, the CPU being the
//          core's attention (ops::attention_block_forward for out and lse with positions 0..T-1,
//          ops::attention_backward for the gradients); fp32 on both sides, sums in other orders;
//          rungs 05, 06 against the CPU attention of the same bf16 values (their own error: P, dS in bf16)
//   rate   TFLOP/s with the FlashAttention papers' causal count: 4·B·H·T²·D / 2 for a forward,
//          2.5 times that for a backward, over the median time of `reps` runs
// bench/attention_sdpa.py times PyTorch's scaled_dot_product_attention on the same problem and
// prints each rung's share of it. Needs a CUDA build and a GPU; gpu_ladder_available() says.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp::ch12 {

bool gpu_ladder_available();

struct LadderShape {
  int batch = 1, seq = 4096, heads = 16, kv_heads = 16, head_dim = 128;
};

struct RungRun {
  std::string rung;      // "01 naive forward", "02 fa1 forward", ... as gpu_ladder.cpp names them
  double error = 0;      // 0 when not checked
  double ms = 0, tflops = 0;  // 0 when reps == 0
};

// check: compare with the CPU (affordable up to T of a few thousand); reps: timed runs (0: none).
std::vector<RungRun> run_gpu_ladder(const LadderShape& shape, int reps, bool check);


}  // namespace usp::ch12
