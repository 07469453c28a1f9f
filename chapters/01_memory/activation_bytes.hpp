// Exercise 01.1: how many bytes does one decoder layer keep for its backward pass?
//
// The playbook counts activations per layer as s·b·h·(34 + 5·a·s/h) bytes for a GPT-style
// block in 16-bit precision. Our Llama-style layer keeps a different set of tensors, and the
// point of this exercise is to derive its count from what each operation's backward needs, for
// every recomputation mode, and the head's, then see the memory tracker measure exactly that number
// (tests/ch01_memory). The layer is common/model/model.cpp's forward_layer and backward_layer;
// the calculator's own count (common/calc) is no answer: the tests compare with the tracker.
#pragma once
#include <cstdint>

#include "common/dtype.hpp"
#include "common/model/config.hpp"

namespace usp::ch01 {

// Bytes one decoder layer of `config` keeps between its forward and its backward, for a
// micro-batch of b samples of s tokens, activations stored as `activation` (the model's
// ModelOptions::activation_dtype: f32, bf16 or f16), under `recompute`:
//   none       everything the layer's backward reads, kept by its forward;
//   selective  the same without what chapter 02's selective mode recomputes;
//   full       only what the backward needs to run the layer's forward again.
// Exactly what Model::saved_bytes() reports for every layer, and what the tracker measures.
// Errors (usp::UsageError, the message starting with exactly this):
//   "layer_activation_bytes: b and s must be >= 1, got b = <b>, s = <s>"
//   "layer_activation_bytes: activations are f32, bf16 or f16, not <dtype>"     (dtype_name)
//   "layer_activation_bytes: <name> is a mixture of experts; its layers keep what the routing
//    decides"                                                 (<name>: config.name, one line)
std::int64_t layer_activation_bytes(const ModelConfig& config, std::int64_t b, std::int64_t s, DType activation,
                                    Recompute recompute = Recompute::none);

// Bytes the head (the final RMSNorm, lm_head and the loss, on one device) keeps between forward
// and backward, for the same micro-batch and activation dtype: exactly the last entry of
// Model::saved_bytes(). Recomputation does not touch the head. The same errors as above, with
// "head_activation_bytes: " in place of "layer_activation_bytes: " (a mixture of experts has an
// ordinary head: it is counted, not refused).
std::int64_t head_activation_bytes(const ModelConfig& config, std::int64_t b, std::int64_t s, DType activation);

}  // namespace usp::ch01
