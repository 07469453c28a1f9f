// ParamStore: every parameter of the model in one flat buffer, and every gradient in a second
// flat buffer with the same layout. A named parameter is a view at an offset, so a DP bucket or
// a ZeRO shard is just a range of the flat buffers.
//
// Order (= forward order, the order backward visits in reverse):
//   model.embed_tokens.weight                     [v, h]
//   for i in 0..L-1, prefix model.layers.{i}.:
//     input_layernorm.weight                      [h]
//     self_attn.q_proj.weight                     [a·d, h]   (HF Linear layout [out, in])
//     self_attn.k_proj.weight                     [g·d, h]
//     self_attn.v_proj.weight                     [g·d, h]
//     self_attn.o_proj.weight                     [h, a·d]
//     post_attention_layernorm.weight             [h]
//     mlp.gate_proj.weight                        [f, h]
//     mlp.up_proj.weight                          [f, h]
//     mlp.down_proj.weight                        [h, f]
//   model.norm.weight                             [h]
//   lm_head.weight                                [v, h]     (absent when tied)
// These are Hugging Face's LlamaForCausalLM names, so checkpoints need no renaming.
//
// Initialisation (principle 1): element j of parameter `name` is
//   rng::normal(seed, name, j) · init_std   for embeddings and linear weights,
//   1                                       for norm weights,
// so any shard initialises exactly its slice of the unsharded tensor.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "tensor.hpp"

namespace usp {

struct ParamInfo {
  std::string name;
  Shape shape;
  std::int64_t offset = 0;  // elements into the flat buffer
  std::int64_t numel = 0;
  int unit = 0;             // 0 = embedding, 1..L = decoder layer i-1, L+1 = final norm + head
  bool is_norm = false;     // norm weights: initialised to 1, no weight decay
};

class ParamStore {
 public:
  // Allocates params (Parameter) and grads (Gradient) in dtype on device; grads start at zero.
  // with_grads = false for inference (usp_eval) and for ZeRO stages that shard gradients.
  ParamStore(const ModelConfig& config, DType dtype = DType::f32, Device device = Device::cpu(),
             bool with_grads = true);

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  const std::vector<ParamInfo>& infos() const { return infos_; }
  std::int64_t numel() const { return numel_; }
  int index(const std::string& name) const;  // throws Error for an unknown name
  int num_units() const { return static_cast<int>(config_.layers) + 2; }
  // [begin, end) element range of one unit's parameters in the flat buffers.
  std::pair<std::int64_t, std::int64_t> unit_range(int unit) const;

  Tensor& flat() { return flat_; }
  const Tensor& flat() const { return flat_; }
  Tensor& flat_grad() { return flat_grad_; }
  const Tensor& flat_grad() const { return flat_grad_; }
  bool has_grads() const { return flat_grad_.defined(); }

  Tensor param(int i) const;   // view of parameter i, shaped
  Tensor grad(int i) const;    // view of its gradient
  Tensor param(const std::string& name) const { return param(index(name)); }
  Tensor grad(const std::string& name) const { return grad(index(name)); }

  // Fills parameters by the rule above.
  void init(std::uint64_t seed);
  void zero_grad();

 private:
  ModelConfig config_;
  DType dtype_;
  std::vector<ParamInfo> infos_;
  std::int64_t numel_ = 0;
  Tensor flat_, flat_grad_;
};

// The names and shapes above, in order, for a config (ParamStore uses it; so do checkpoints
// and the calculator). Offsets are filled in; unit and is_norm too.
std::vector<ParamInfo> llama_param_layout(const ModelConfig& config);

}  // namespace usp
