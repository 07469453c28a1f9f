// Model: the Llama-style decoder with explicit forward and backward (no autograd).
//
//   tokens [B, T] -> embed -> L × DecoderLayer -> RMSNorm -> lm_head -> logits [B·T, V]
//   DecoderLayer(x):  h1 = rmsnorm(x) ; q,k,v = h1·Wqᵀ, h1·Wkᵀ, h1·Wvᵀ ; rope(q), rope(k)
//                     a = attention(q, k, v) ; x2 = x + a·Woᵀ
//                     h2 = rmsnorm(x2) ; g, u = h2·Wgᵀ, h2·Wuᵀ ; z = silu(g)·u ; y = x2 + z·Wdᵀ
//
// What a layer saves for backward (all in the activation dtype, except the two rstd vectors,
// which are fp32), per token: x, h1, q, k, v, a, x2, h2 (C or G·D each), g, u, z (F each),
// rstd1, rstd2 (1 each), and in Recompute::none the attention probabilities (H·T per token).
// Selective drops the probabilities; full keeps only x and recomputes the layer in backward.
// The head saves the final norm's input and output, its rstd, and the logits.
// Every saved tensor is allocated as MemCategory::Activation and released as soon as backward
// has used it, so the tracker's activation curve is the playbook's memory profile.
//
// Gradients are ACCUMULATED into the ParamStore's gradient buffer (zero it with zero_grad()),
// which is what gradient accumulation and data parallelism build on.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/model/config.hpp"
#include "common/model/attention_hook.hpp"
#include "common/model/expert_parallel.hpp"
#include "common/model/moe.hpp"
#include "common/model/params.hpp"
#include "common/model/residual_norm.hpp"
#include "common/model/linear_hook.hpp"
#include "common/tensor.hpp"

namespace usp {

// The attention probabilities' maker, for a chapter that supplies its own (chapter 02's exercise
// 02.1): q [B, T, H, D], k [B, T, G, D] (after RoPE, in the activation dtype) -> probs
// [B, H, T, T] f32, softmax(q·kᵀ/√D + causal mask), zero above the diagonal.
using AttentionProbs = std::function<void(const Tensor& q, const Tensor& k, Tensor& probs)>;

struct ModelOptions {
  Recompute recompute = Recompute::none;
  DType activation_dtype = DType::f32;  // f32, bf16 or f16 (saved activations and layer outputs)
  // How the linear blocks, embedding and loss compute (linear_hook.hpp): chapter 06's tensor
  // parallelism (for a ParamStore holding the matching TpShard), 08's deferred weight gradients,
  // 14's FP8 matmuls. Null: UnsplitLinears. Not owned; must outlive the model.
  LinearHook* linears = nullptr;
  // The token positions and the attention (attention_hook.hpp): chapter 07's context parallelism,
  // 12's flash attention, generation's KV cache. Null: the ops' attention over the tokens here,
  // at positions 0..T-1. Not owned; must outlive the model. Attention keeps no [T, T]
  // probabilities then (Recompute none and selective keep the same).
  AttentionHook* attention = nullptr;
  // Expert parallelism (chapter 09): how a MoE layer's rows reach experts on other ranks, for a
  // ParamStore holding the matching EpShard. Null: every expert is here. Not owned.
  ExpertParallel* expert_parallel = nullptr;
  // The residual add + RMSNorm between attention and MLP as one operation (chapter 13's fused
  // kernel). Null: ops::add_inplace then ops::rmsnorm_forward. Not owned; must outlive the model.
  ResidualNorm* residual_norm = nullptr;
  // Pipeline parallelism (chapter 08): the units this model runs, [first_unit, last_unit]
  // (0 embedding, 1..L layers, L+1 final norm + head; last_unit -1 = the head). A stage touches
  // only its units' parameters and gradients. Default: the whole model.
  struct Stage {
    int first_unit = 0;
    int last_unit = -1;
  } stage = {};
};

// The input of one stage's forward (Model::forward_stage): B sequences of T tokens; the first
// stage reads the tokens, the others the previous stage's output x [B·T, C] (its stream rows:
// [n, C] under sequence parallelism); the last stage also needs the targets.
struct StageInput {
  Tensor tokens = {};   // [B, T] i32 (first stage)
  Tensor targets = {};  // [B, T] i32 (last stage)
  Tensor x = {};        // [n, C] (every other stage): the previous stage's output, kept as this stage's input
  std::int64_t batch = 0, seq = 0;
};

// Hooks let later chapters act inside forward and backward without changing the model:
// data parallelism launches a gradient's all-reduce when it is ready; ZeRO-3 gathers a unit's
// parameters before it runs and frees them after. Units: 0 embedding, 1..L layers, L+1 head.
struct ModelHooks {
  std::function<void(int unit)> before_forward, after_forward;
  std::function<void(int unit)> before_backward, after_backward;
  // Parameter i's gradient is final for this backward pass: once per pass and parameter, when
  // nothing of this pass will add to it any more. In reverse parameter order as backward goes,
  // except that a linear block's weight is reported once the LinearHook has computed its gradient
  // (LinearHook::after_weight_grads): during backward, or, when chapter 08's WeightGradQueue defers
  // the weight gradients of a B, during its W, after backward_stage has returned.
  std::function<void(int param_index)> grad_ready;
};

// FLOPs of the last forward + backward (a multiply-add counts 2).
struct StepFlops {
  std::int64_t forward = 0;
  std::int64_t backward = 0;
  std::int64_t recompute = 0;  // forward work repeated in backward (selective / full)
  std::int64_t model() const { return forward + backward; }              // for MFU
  std::int64_t hardware() const { return forward + backward + recompute; }  // for HFU
};

class Model {
 public:
  Model(ParamStore& params, ModelOptions options = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return params_.config(); }
  const ModelOptions& options() const { return options_; }
  ParamStore& params() { return params_; }
  void set_hooks(ModelHooks hooks) { hooks_ = std::move(hooks); }
  // When set, every probability the model makes comes from `make`: each layer's forward and
  // selective recomputation's rebuild in backward (so the rebuild reproduces the forward bit for
  // bit). Unset: the ops' own softmax (ops::attention_forward / attention_backward).
  void set_attention_probs(AttentionProbs make) { attention_probs_ = std::move(make); }

  // inputs, targets [B, T] i32. Runs the forward pass, keeps what backward needs and returns
  // the mean cross-entropy over the B·T positions. With experts the objective is that plus the
  // load-balancing loss (aux_loss()); backward differentiates both.
  double forward(const Tensor& inputs, const Tensor& targets);
  // Backpropagates loss_scale · (mean loss of the last forward) into the gradient buffer
  // (accumulating) and releases every saved activation. Call once per forward.
  void backward(float loss_scale = 1.0f);
  // ---- pipeline stages (ModelOptions::stage) ------------------------------------------------
  // Several micro-batches may be in flight: each forward keeps its state under the caller's id
  // until backward_stage(id). The last stage returns the micro-batch's mean loss (x_out stays
  // undefined); the others return 0 and set x_out [n, C] (an Activation: send it, then drop it).
  double forward_stage(int id, const StageInput& in, Tensor& x_out);
  // Backpropagates micro-batch id: the last stage from loss_scale · its loss (dy undefined), the
  // others from dy [n, C] f32, the gradient of their output. Gradients accumulate; the first
  // stage ends at the embedding (dx_out undefined), the others set dx_out [n, C] f32, the
  // gradient of their input, for the previous stage.
  void backward_stage(int id, const Tensor& dy, float loss_scale, Tensor& dx_out);
  // Forward-only through the stage (evaluation): nothing is kept for a backward, no hook is
  // called, every tensor it makes is a Temporary (the tracker's Activation curve is untouched).
  // The same input as forward_stage; the last stage returns the micro-batch's mean loss (x_out
  // stays undefined), the others return 0 and set x_out [n, C] (a Temporary: send it, then drop it).
  // The whole model (one stage) gives evaluate's loss.
  double evaluate_stage(const StageInput& in, Tensor& x_out);
  int first_unit() const;
  int last_unit() const;
  int passes_held() const;  // forwards waiting for their backward (activations in flight)

  // ---- mixture of experts (ModelConfig::experts > 0) ------------------------------------------
  // The last forward's (or evaluate's) load-balancing loss over this model's layers: router_aux_loss_coef ·
  // (1 / L) · Σ_layers E · Σ_i f_i · P_i (moe.hpp; the mean over all L layers of the model, so
  // pipeline stages' terms add up to the whole model's). 0 without experts.
  double aux_loss() const { return aux_loss_; }
  // The last forward's (or evaluate's) routing of each layer this model runs ([layer]; empty
  // entries elsewhere).
  const std::vector<MoeRouting>& routing() const { return routing_; }

  // Forward without keeping anything (evaluation): the mean loss.
  double evaluate(const Tensor& inputs, const Tensor& targets);
  // Forward without keeping anything: the logits [B·T, V] (a Temporary; under tensor parallelism
  // this rank's vocabulary columns). inputs [B, T] i32. What generation reads (kv_cache.hpp).
  Tensor forward_logits(const Tensor& inputs);
  // The logits [B·T, V] of the last forward (still held until backward); for tests and eval.
  // Under tensor parallelism: this rank's vocabulary columns [B·T, V/t].
  const Tensor& logits() const;

  // Bytes each unit saved in the last forward: the sum of its saved tensors' sizes, what the
  // layers declare. [0] embedding (0), [1..L] layers, [L+1] head. Valid after forward.
  const std::vector<std::int64_t>& saved_bytes() const { return saved_bytes_; }
  // The same, measured as the tracker's Activation growth while each unit ran forward.
  const std::vector<std::int64_t>& measured_saved_bytes() const { return measured_saved_bytes_; }
  StepFlops flops() const { return flops_; }

  struct Impl;  // the layers and their saved state (model.cpp)

 private:
  ParamStore& params_;
  ModelOptions options_;
  ModelHooks hooks_;
  AttentionProbs attention_probs_;
  UnsplitLinears unsplit_linears_;
  LinearHook* linears_;  // options_.linears, or &unsplit_linears_
  SingleDeviceExperts single_device_experts_;
  ExpertParallel* ep_;  // options_.expert_parallel, or &single_device_experts_
  UnfusedResidualNorm unfused_norm_;
  ResidualNorm* rn_;  // options_.residual_norm, or &unfused_norm_
  // evaluate_stage's and forward_logits' pass: the stage's units, keeping nothing; returns the
  // logits [N, V] on the last stage, the stage's output x [n, C] on the others. `caller` (the
  // public function's name) begins the messages of a refused input.
  Tensor forward_kept_nothing(const StageInput& in, const char* caller);
  double aux_loss_ = 0;
  std::vector<MoeRouting> routing_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::int64_t> saved_bytes_, measured_saved_bytes_;
  StepFlops flops_;
};

}  // namespace usp
