// Exercise 01.1: how many bytes does one decoder layer keep for its backward pass?
//
// The playbook counts activations per layer as s·b·h·(34 + 5·a·s/h) bytes for a GPT-style
// block in 16-bit precision. Our Llama-style layer keeps a different set of tensors, and the
// point of this exercise is to derive its count from what each operation saves, then see the
// memory tracker measure exactly that number (tests/ch01_memory).
//
// Walk through the layer in common/model/model.cpp (forward_layer and the LayerSaved struct):
// for each saved tensor, its shape in terms of b (micro-batch), s (sequence), h (hidden),
// a (heads), g (kv heads), d (head dim), f (ffn), and its element size.
#pragma once
#include <cstdint>

#include "common/dtype.hpp"
#include "common/model/config.hpp"

namespace usp::ch01 {

// Bytes one decoder layer keeps for backward with no recomputation (Recompute::none), for a
// micro-batch of b samples of s tokens, with activations stored as `activation` (f32 or bf16).
std::int64_t layer_activation_bytes(const ModelConfig& config, std::int64_t b, std::int64_t s, DType activation);

}  // namespace usp::ch01
