// FLOPs of one training step, by the playbook's convention (Kaplan et al. 2020 for the 6N rule,
// PaLM / Megatron for attention): a multiply-add counts 2 FLOPs, and per token
//   forward        2N + 4·L·h·s     (2 FLOPs per parameter; q·kᵀ and probs·v over the full s²,
//                                    causal masking is not discounted)
//   backward       twice the forward
//   model (MFU)    6N + 12·L·h·s
// N counts every parameter, embedding included (the 6N rule as the playbook uses it; the
// embedding lookup itself costs no FLOPs); for a mixture of experts, the parameters one token
// meets (ModelConfig::active_parameters: k of the E experts per layer). Recomputation adds forward work that MFU does not
// count and HFU does:
//   full       one more forward of the layers: 2N + 4·L·h·s per token (the playbook's rule)
//   selective  the attention scores q·kᵀ again: 2·L·h·s per token
// Tokens per step = mbs · seq · dp: one micro-batch per data-parallel replica (TP, CP and PP
// split the work of those tokens; they do not add tokens).
#pragma once
#include <cstdint>

#include "common/calc/training_setup.hpp"

namespace usp::calc {

struct FlopsEstimate {
  std::int64_t tokens = 0;  // tokens per step, over all replicas
  double model = 0;         // 6N·tokens + 12·L·h·s·tokens
  double recompute = 0;     // forward work repeated in backward
  double hardware() const { return model + recompute; }  // what the GPUs execute (HFU)
};

// FLOPs of one optimizer step over the whole job (every rank together). Doubles: a 405B step
// exceeds 2^63.
FlopsEstimate flops_per_step(const TrainingSetup& setup);

}  // namespace usp::calc
