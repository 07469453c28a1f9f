// Naive vs flash attention on the CPU, forward + backward, at several sequence lengths: time, the
// memory each needs beyond its inputs and outputs (the tracker's peak), and how far flash's
// outputs and gradients are from naive's.
//   naive  ops::attention_forward / attention_backward: S = q·kᵀ and P = softmax(S) for every
//          (batch, head) as [B, H, T, T] — P is kept for the backward (what a layer saves);
//   flash  flash_attention.hpp: tiles of q_rows × k_cols scores, the log-sum-exp [B, H, T] kept.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/12_flash_attention/flash_attention.hpp"

namespace usp::ch12 {

struct BenchShape {
  std::int64_t batch = 1, heads = 8, kv_heads = 8, head_dim = 64;
};

struct AttentionPoint {
  std::int64_t seq = 0;
  std::string variant;  // "naive", "flash"
  double forward_ms = 0, backward_ms = 0;
  std::int64_t memory_bytes = 0;  // peak Activation + Temporary bytes above the inputs and outputs
  double max_abs_error = 0;       // flash: largest |flash - naive| over out, dq, dk, dv; naive: 0
};

// Both variants at each sequence length (causal), inputs from the counter-based RNG.
std::vector<AttentionPoint> bench_attention(const std::vector<std::int64_t>& seqs, BenchShape shape, FlashTiles tiles);

}  // namespace usp::ch12
