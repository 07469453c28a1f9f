// Flash attention against the references on a shape that is no tile multiple (T = 37 with 16 × 8
// tiles, head dim 20, GQA 4 query heads on 2 kv heads, 2 sequences): causal against
// ops::attention_forward / attention_backward (the naive attention that keeps P), non-causal
// against ops::attention_block_forward / attention_block_backward with every key visible — the
// outputs, the log-sum-exp and the three gradients, in fp32 and with bf16 inputs.
#pragma once
#include <string>
#include <vector>

#include "chapters/12_flash_attention/flash_attention.hpp"
#include "common/dtype.hpp"

namespace usp::ch12 {

struct Equivalence {
  std::string what;  // "causal f32", ...
  DType dtype = DType::f32;
  bool causal = true;
  double out = 0, lse = 0, dq = 0, dk = 0, dv = 0;  // largest |flash - reference|
  double magnitude = 0;  // the largest |reference value| of out, dq, dk, dv
  double largest() const;
};

std::vector<Equivalence> check_equivalence(FlashTiles tiles = {16, 8});

}  // namespace usp::ch12
