// The ZeRO formulas for our model and precision, counted exactly (padding included): the bytes
// of training state one rank keeps between steps under each stage. The chapter prints them next
// to the memory tracker's measurement, and the tests require the two to be equal.
//
//   b = bytes of a parameter (4 fp32, 2 bf16); g = b, plus 4 with fp32 gradient accumulation;
//   k = AdamW's bytes per parameter: m and v (8), plus the fp32 master copy (4) when b = 2.
//   stage 0   b·Ψ                   g·Ψ                   k·Ψ
//   stage 1   b·N_d·S               g·N_d·S               k·owned          (S, owned: shard of Ψ)
//   stage 2   b·Σ_u N_d·S_u         g·Σ_u S_u             k·Σ_u owned_u    (per-unit shards)
//   stage 3   b·Σ_u S_u             g·Σ_u S_u             k·Σ_u owned_u
// N_d·S is Ψ rounded up to a multiple of N_d (the padded flat buffer); Σ_u S_u is Ψ/N_d when N_d
// divides every unit, which gives the playbook's 2Ψ+2Ψ+kΨ/N_d, 2Ψ+(2+k)Ψ/N_d, (4+k)Ψ/N_d for
// mixed precision. The padding has no optimizer state (it is not a parameter), so k multiplies
// the owned elements only.
#pragma once
#include <cstdint>

#include "common/dtype.hpp"
#include "common/model/config.hpp"

namespace usp::ch05 {

struct StateBytes {
  std::int64_t parameters = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer = 0;
  std::int64_t total() const { return parameters + gradients + optimizer; }
};

StateBytes zero_state_bytes(const ModelConfig& model, DType dtype, int stage, int ranks, int rank,
                            bool fp32_grad_accum);

}  // namespace usp::ch05
