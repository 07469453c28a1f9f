// CpLayout: a dp × cp (× tp) mesh of context parallelism, and the checks that it can run a model
// on sequences of a length. The trainer of this chapter takes one; chapter 10's 5D layouts are
// checked by the same rules (check_cp_layout on their dp·cp·tp ranks).
#pragma once
#include <cstdint>
#include <string>

#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/07_context_parallel/cp_layout.hpp"
#include "common/model/config.hpp"

namespace usp::ch07 {

struct CpLayout {
  int dp = 1;
  int cp = 1;
  CpSharding sharding = CpSharding::zigzag;
  CpAttention attention = CpAttention::ring;
  int tp = 1;  // each rank of the dp × cp mesh a tensor-parallel group of tp ranks

  int world() const { return dp * cp * tp; }
  std::string label() const;  // "CP 4 ring zig-zag", "DP 2 × CP 2 all-gather contiguous", "CP 2 × TP 2 ring ..."
};

// UsageError (the same on every rank) when the layout cannot run: dp·cp·tp not the world size, seq
// not a multiple of cp (contiguous) or 2·cp (zig-zag), tp not dividing the heads, kv heads, ffn
// and vocabulary (chapter 06's split), or (all-to-all) cp not dividing a TP rank's heads and kv
// heads.
void check_cp_layout(const CpLayout& layout, int world_size, const ModelConfig& model, std::int64_t seq);

}  // namespace usp::ch07
