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
// Initialisation (docs/ARCHITECTURE.md, principle 1): element j of parameter `name` is
//   rng::normal(seed, name, j) · init_std   for embeddings and linear weights,
//   1                                       for norm weights,
// where j indexes the UNSHARDED tensor, so any shard initialises exactly its slice of it: a
// ZeRO range (init_range) or a tensor-parallel shard (TpShard, ParamInfo::full_index).
//
// Layouts (chapter 05, ZeRO). By default (the constructor with `with_grads`) both buffers are
// flat and exactly numel() long: what every chapter before 05 uses, unchanged. A StoreLayout
// can instead
//   * pad the buffers with zeros to a multiple of pad_to elements, so that N_d ranks split them
//     into equal shards (ZeRO-1 pads the flat buffers; flat() stays the unpadded view), and
//   * keep parameters and/or gradients per UNIT (0 embedding, 1..L layers, L+1 final norm +
//     head): one buffer per unit, each padded to pad_to, allocated by materialize_*() and freed
//     by release_*(). param(i) / grad(i) are then views into their unit's buffer and throw
//     usp::Error while it is released. ZeRO-2 keeps gradients per unit (each reduce-scattered
//     and freed once its backward is done); ZeRO-3 keeps parameters per unit too (gathered
//     before a unit runs, freed after). flat() / flat_grad() are undefined tensors then.
// The model reads weights and writes gradients only through param(i) / grad(i), so it runs on
// any layout as long as the units it touches are materialized (ModelHooks say when).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/model/config.hpp"
#include "common/tensor.hpp"

namespace usp {

// Tensor parallelism (chapter 06): which of `size` shards of every split weight this store
// holds. size = 1 is the whole model.
struct TpShard {
  std::int64_t size = 1;
  std::int64_t rank = 0;
};

// Expert parallelism (chapter 09): which of `size` equal groups of a MoE model's experts this
// store holds (experts [rank·E/size, (rank+1)·E/size)). size = 1 is every expert.
struct EpShard {
  std::int64_t size = 1;
  std::int64_t rank = 0;
};

struct ParamInfo {
  std::string name;
  Shape shape;              // what this store holds (the shard under tensor parallelism)
  std::int64_t offset = 0;  // elements into the flat buffer
  std::int64_t numel = 0;
  int unit = 0;             // 0 = embedding, 1..L = decoder layer i-1, L+1 = final norm + head
  bool is_norm = false;     // norm weights: initialised to 1, no weight decay
  int expert = -1;          // an expert's weight: the expert's (global) index; else -1
  // Tensor parallelism: the unsharded tensor's shape, the dimension it is split along (-1:
  // replicated, 0: rows = output features, 1: columns = input features) and where along that
  // dimension this shard begins. Without TP: full_shape = shape, split_dim = -1.
  Shape full_shape;
  int split_dim = -1;
  std::int64_t shard_begin = 0;
  // Element j of this shard is element full_index(j) of the unsharded tensor (row-major).
  std::int64_t full_index(std::int64_t j) const;
};

// Where a ParamStore keeps its parameters or its gradients.
//   flat      one buffer for the whole model (the default)
//   per_unit  one buffer per unit, present only between materialize_*() and release_*()
//   none      not at all (gradients of an inference store)
enum class Residency : unsigned char { flat, per_unit, none };

struct StoreLayout {
  Residency params = Residency::flat;  // flat or per_unit
  Residency grads = Residency::flat;   // flat, per_unit or none
  std::int64_t pad_to = 1;             // each buffer's length is a multiple of this (>= 1)
  TpShard tp = {};                     // the tensor-parallel shard held (default: everything)
  EpShard ep = {};                     // the experts held (default: all of them)
};

class ParamStore {
 public:
  // Allocates params (Parameter) and grads (Gradient) in dtype on device; grads start at zero.
  // with_grads = false for inference (usp_eval).
  ParamStore(const ModelConfig& config, DType dtype = DType::f32, Device device = Device::cpu(),
             bool with_grads = true);
  // Any layout. Flat buffers are allocated here (zeros); per-unit buffers start released.
  ParamStore(const ModelConfig& config, DType dtype, Device device, StoreLayout layout);

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }  // where the parameters (and the model's activations) live
  const std::vector<ParamInfo>& infos() const { return infos_; }
  std::int64_t numel() const { return numel_; }
  int index(const std::string& name) const;  // throws Error for an unknown name
  int num_units() const { return static_cast<int>(config_.layers) + 2; }
  // [begin, end) element range of one unit's parameters in the flat buffers.
  std::pair<std::int64_t, std::int64_t> unit_range(int unit) const;

  // The flat buffers' first numel() elements (undefined when that side is not flat).
  Tensor& flat() { return flat_; }
  const Tensor& flat() const { return flat_; }
  Tensor& flat_grad() { return flat_grad_; }
  const Tensor& flat_grad() const { return flat_grad_; }
  bool has_grads() const { return layout_.grads != Residency::none; }

  Tensor param(int i) const;   // view of parameter i, shaped
  Tensor grad(int i) const;    // view of its gradient
  Tensor param(const std::string& name) const { return param(index(name)); }
  Tensor grad(const std::string& name) const { return grad(index(name)); }

  // Fills parameters by the rule above (per unit: every unit must be materialized).
  void init(std::uint64_t seed);
  // Writes elements [begin, end) of the flat parameter vector, by the same rule, to
  // out[0, end - begin) (in out's dtype) and zeros to the rest of out: a shard initialises
  // itself without the full model ever existing. Needs no buffer of this store.
  void init_range(std::uint64_t seed, std::int64_t begin, std::int64_t end, Tensor& out) const;
  void zero_grad();  // flat: the whole buffer; per unit: the materialized units

  // ---- layouts (see the top of this file) -----------------------------------------------------
  const StoreLayout& layout() const { return layout_; }
  std::int64_t padded_numel() const;               // numel() rounded up to a multiple of pad_to
  Tensor& padded_flat() { return padded_flat_; }   // [padded_numel()]; undefined unless flat
  Tensor& padded_flat_grad() { return padded_flat_grad_; }
  // Elements of one unit's buffer: its parameters' count rounded up to a multiple of pad_to.
  std::int64_t unit_padded_numel(int unit) const;
  void materialize_params(int unit);  // allocates the unit's buffer (zeros); per_unit only
  void release_params(int unit);
  bool params_materialized(int unit) const;  // always true when flat
  void materialize_grads(int unit);
  void release_grads(int unit);
  bool grads_materialized(int unit) const;
  // The unit's whole buffer [unit_padded_numel(unit)] (per_unit; Error while released).
  Tensor& unit_params(int unit);
  Tensor& unit_grads(int unit);
  int materialized_param_units() const;  // per_unit parameter buffers alive now

 private:
  ModelConfig config_;
  DType dtype_;
  std::vector<ParamInfo> infos_;
  std::int64_t numel_ = 0;
  StoreLayout layout_;
  Device device_;
  Tensor flat_, flat_grad_;                   // [numel]: views of the padded buffers
  Tensor padded_flat_, padded_flat_grad_;     // [padded_numel]
  std::vector<std::pair<std::int64_t, std::int64_t>> unit_ranges_;
  std::vector<Tensor> unit_params_, unit_grads_;  // per_unit buffers (undefined = released)

  void check_unit(int unit, const char* what) const;
};

// The names and shapes above, in order, for a config (ParamStore uses it; so do checkpoints
// and the calculator). Offsets are filled in; unit and is_norm too.
//
// With a TpShard of size t (chapter 06, Megatron-LM's split), rank r holds
//   column-parallel weights, split along rows (dim 0): q_proj, k_proj, v_proj (whole heads:
//     heads/t query heads and kv_heads/t kv heads each), gate_proj, up_proj (ffn/t rows);
//   row-parallel weights, split along columns (dim 1): o_proj (heads/t · d), down_proj (ffn/t);
//   the vocabulary-parallel embedding and lm_head, split along rows (vocab/t tokens each);
//   the RMSNorm weights whole (replicated).
// Shard r of a split dimension of size n is [r·n/t, (r+1)·n/t). UsageError when t does not
// divide heads, kv_heads, ffn and vocab (kv heads are not replicated when t exceeds them).
//
// With an EpShard of size e, rank r holds only the experts [r·E/e, (r+1)·E/e) (their names keep
// the global index); the router and everything else whole.
std::vector<ParamInfo> llama_param_layout(const ModelConfig& config, TpShard tp = {}, EpShard ep = {});
// The UsageError above, or nothing: t must divide heads, kv heads, ffn and vocab (and t = 1 with
// experts: this course spreads experts with expert parallelism, not tensor parallelism).
void check_tp_shard(const ModelConfig& config, TpShard tp);
// UsageError unless e divides the number of experts (e = 1 always passes; e > 1 needs experts).
void check_ep_shard(const ModelConfig& config, EpShard ep);

}  // namespace usp
