// ModelConfig: the shape of the Llama-style decoder every chapter trains, and the built-in
// shapes (Llama-3.1/3.2 and the course's small models) that the calculator and the chapters
// share. Names follow Hugging Face's LlamaConfig where one exists.
//
//   hidden h, layers L, heads a (query heads), kv_heads g (GQA: a % g == 0), head_dim d = h / a,
//   ffn f (SwiGLU intermediate size), vocab v (256 for byte-level text).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp {

struct ModelConfig {
  std::string name = "custom";
  std::int64_t vocab = 256;
  std::int64_t hidden = 256;
  std::int64_t layers = 4;
  std::int64_t heads = 8;
  std::int64_t kv_heads = 4;
  std::int64_t ffn = 768;
  std::int64_t max_seq = 4096;   // max_position_embeddings (RoPE has no learned table)
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;        // rms_norm_eps
  double init_std = 0.02;        // initializer_range: linear and embedding weights ~ N(0, std²)
  bool tied_embeddings = false;  // tie_word_embeddings: lm_head reuses embed_tokens
  // Mixture of experts (chapter 09; Hugging Face's MixtralConfig names). experts = 0: every layer
  // has the dense SwiGLU MLP. Otherwise each layer's MLP is a router and `experts` SwiGLU experts
  // of intermediate size ffn; each token goes to its top experts_per_token experts (softmax over
  // the router logits, the top-k probabilities renormalised to sum to 1), and the layer adds the
  // load-balancing loss router_aux_loss_coef · E · Σ_i f_i · P_i (common/model/moe.hpp).
  std::int64_t experts = 0;            // num_local_experts
  std::int64_t experts_per_token = 2;  // num_experts_per_tok (top-k)
  // Each expert takes at most ceil(capacity_factor · N · k / E) of a layer's N·k assignments,
  // in token order; the rest are dropped (the token keeps its residual). 0: dropless.
  double capacity_factor = 0;
  double router_aux_loss_coef = 0.01;  // α

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t q_dim() const { return heads * head_dim(); }      // = hidden
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }

  // The largest sizes accepted (from flags or config.json): far above any real model, small
  // enough that every parameter, element and byte count of the model fits in 64 bits.
  static constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
  static constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
  static constexpr std::int64_t kMaxHeads = std::int64_t{1} << 14;
  static constexpr std::int64_t kMaxFfn = std::int64_t{1} << 22;
  static constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxExperts = std::int64_t{1} << 12;

  bool is_moe() const { return experts > 0; }

  // Throws UsageError naming the first inconsistency (every size in [1, its kMax above], heads
  // must divide hidden, kv_heads must divide heads, head_dim must be even for RoPE; with experts,
  // 1 <= experts_per_token <= experts, 0 <= capacity_factor <= experts, router_aux_loss_coef >= 0).
  void validate() const;

  // Exact parameter count of this architecture (what ParamStore allocates):
  //   v·h (embedding) + L·(h·a·d + 2·h·g·d + a·d·h + 3·h·f + 2h) + h (final norm)
  //   + v·h when the head is untied; with experts, each layer's 3·h·f becomes E·3·h·f + E·h
  //   (the experts and the router).
  std::int64_t num_parameters() const;
  std::int64_t params_per_layer() const;
  // The parameters one token's forward uses: with experts, k of the E experts per layer (and the
  // whole router); without, num_parameters().
  std::int64_t active_parameters() const;

  // Built-in shapes: "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.2-1b",
  // "llama3.2-3b", the mixture of experts "mixtral-8x7b", and the course's CPU-sized "usp-tiny",
  // "usp-small", "usp-base".
  // Throws UsageError listing the names for an unknown one.
  static ModelConfig builtin(const std::string& name);
  static std::vector<std::string> builtin_names();

  std::string str() const;  // "usp-small: L=4 h=256 a=8 g=4 f=768 v=256" (+ " E=8 k=2")
};

// Which activations the decoder layers keep for backward (chapter 02):
//   none       every tensor backward needs is saved
//   selective  the attention probabilities (b·a·s² per layer) are dropped and recomputed
//   full       only each layer's input is saved; the whole layer is recomputed in backward
enum class Recompute { none, selective, full };
const char* recompute_name(Recompute r);
Recompute parse_recompute(const std::string& s);  // UsageError otherwise

}  // namespace usp
