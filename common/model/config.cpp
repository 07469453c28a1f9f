#include "common/model/config.hpp"

#include <sstream>

#include "common/checked_math.hpp"
#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "common/number_text.hpp"

namespace usp {

void ModelConfig::validate() const {
  auto in_range = [&](std::int64_t v, const char* what, std::int64_t max) {
    if (v < 1 || v > max)
      throw UsageError(std::string("model: ") + what + " must be between 1 and " + std::to_string(max) + ", got " +
                       std::to_string(v));
  };
  in_range(vocab, "vocab", kMaxVocab);
  in_range(hidden, "hidden", kMaxHidden);
  in_range(layers, "layers", kMaxLayers);
  in_range(heads, "heads", kMaxHeads);
  in_range(kv_heads, "kv-heads", kMaxHeads);
  in_range(ffn, "ffn", kMaxFfn);
  in_range(max_seq, "max-seq", kMaxSeq);
  if (hidden % heads != 0)
    throw UsageError("model: heads (" + std::to_string(heads) + ") must divide hidden (" +
                     std::to_string(hidden) + ")");
  if (heads % kv_heads != 0)
    throw UsageError("model: kv-heads (" + std::to_string(kv_heads) + ") must divide heads (" +
                     std::to_string(heads) + ")");
  if (head_dim() % 2 != 0)
    throw UsageError("model: head_dim = hidden / heads = " + std::to_string(head_dim()) +
                     " must be even for RoPE");
  if (!(norm_eps > 0)) throw UsageError("model: norm_eps must be > 0");
  if (experts < 0 || experts > kMaxExperts)
    throw UsageError("model: experts must be between 0 (a dense MLP) and " + std::to_string(kMaxExperts) + ", got " +
                     std::to_string(experts));
  if (experts > 0) {
    if (experts_per_token < 1 || experts_per_token > experts)
      throw UsageError("model: top-k = " + std::to_string(experts_per_token) + " experts per token must be between 1 and " +
                       "the number of experts (" + std::to_string(experts) + ")");
    if (!(capacity_factor >= 0))
      throw UsageError("model: the capacity factor must be > 0 (or 0 for dropless routing)");
    if (!(capacity_factor <= static_cast<double>(experts)))
      throw UsageError("model: the capacity factor must be at most the number of experts (" + std::to_string(experts) +
                       "): at " + std::to_string(experts) + " each expert may already take every assignment; got " +
                       format_double(capacity_factor) + " (0 for dropless routing)");
    if (!(router_aux_loss_coef >= 0)) throw UsageError("model: the router's aux-loss coefficient must be >= 0");
  }
  if (!(rope_theta > 0)) throw UsageError("model: rope_theta must be > 0");
}

std::int64_t ModelConfig::params_per_layer() const {
  const Count h = hidden, d = head_dim();
  const Count attention = h * heads * d + 2 * h * kv_heads * d + Count(heads) * d * h + 2 * h;
  const Count mlp = is_moe() ? Count(experts) * 3 * h * ffn + Count(experts) * h : 3 * h * ffn;
  return (attention + mlp).value();
}

std::int64_t ModelConfig::active_parameters() const {
  if (!is_moe()) return num_parameters();
  const Count idle = Count(layers) * (experts - experts_per_token) * 3 * hidden * ffn;
  return num_parameters() - idle.value();
}

std::int64_t ModelConfig::num_parameters() const {
  return (Count(vocab) * hidden * (tied_embeddings ? 1 : 2) + Count(layers) * params_per_layer() + hidden).value();
}

namespace {
ModelConfig shape(const char* name, std::int64_t L, std::int64_t h, std::int64_t a, std::int64_t g,
                  std::int64_t f, std::int64_t v, bool tied, double theta, std::int64_t max_seq) {
  ModelConfig c;
  c.name = name;
  c.layers = L;
  c.hidden = h;
  c.heads = a;
  c.kv_heads = g;
  c.ffn = f;
  c.vocab = v;
  c.tied_embeddings = tied;
  c.rope_theta = theta;
  c.max_seq = max_seq;
  return c;
}

ModelConfig moe(ModelConfig c, std::int64_t experts, std::int64_t top_k) {
  c.experts = experts;
  c.experts_per_token = top_k;
  c.router_aux_loss_coef = 0.02;  // Mixtral's config
  return c;
}

std::vector<ModelConfig> builtins() {
  // Llama-3.1 / 3.2 shapes from their published configs (norm eps 1e-5, theta 500000).
  return {
      shape("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, true, 500000.0, 131072),
      shape("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256, true, 500000.0, 131072),
      shape("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256, false, 500000.0, 131072),
      shape("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256, false, 500000.0, 131072),
      shape("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, false, 500000.0, 131072),
      // Mixtral 8x7B (its published config: 8 experts of ffn 14336, top-2; 46.7B parameters,
      // 12.9B active per token).
      moe(shape("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, false, 1000000.0, 32768), 8, 2),
      // The playbook's benchmark models (about 1.34B, 3.57B, 8.86B and 80B parameters, Llama 3's
      // vocabulary): Llama 3.2 1B / 3B and Llama 3.1 8B / 70B dimensions with full multi-head
      // attention (kv heads = heads), the shapes whose exact counts give those sizes.
      shape("playbook-1.34b", 16, 2048, 32, 32, 8192, 128256, true, 500000.0, 131072),
      shape("playbook-3.57b", 28, 3072, 24, 24, 8192, 128256, true, 500000.0, 131072),
      shape("playbook-8.86b", 32, 4096, 32, 32, 14336, 128256, false, 500000.0, 131072),
      shape("playbook-80b", 80, 8192, 64, 64, 28672, 128256, false, 500000.0, 131072),
      // GPT-style models of the sizes the ORNL Frontier study trained (Dash et al. 2023, "Optimizing
      // Distributed Training on Frontier for Large Language Models": 22B, 175B, 1T). The study's
      // exact shapes were not in the sources we could reach, so these are assumptions: GPT-3's
      // 175B shape (96 layers, h 12288, 96 heads), the 1T shape of Megatron-LM's scaling table
      // (128 layers, h 25600, 160 heads), and 48 layers of h 6144 for 22B (12·L·h² ≈ 22B); GPT-2's
      // vocabulary padded to 50304, tied embeddings, 2048 positions. GPT's 2-matrix MLP of width 4h
      // is written as this course's SwiGLU with f = 8h/3 (the same parameters and FLOPs; 68264 for
      // the 1T, a multiple of 8 near 68267).
      shape("frontier-22b", 48, 6144, 48, 48, 16384, 50304, true, 10000.0, 2048),
      shape("frontier-175b", 96, 12288, 96, 96, 32768, 50304, true, 10000.0, 2048),
      shape("frontier-1t", 128, 25600, 160, 160, 68264, 50304, true, 10000.0, 2048),
      // The course's CPU-sized models, byte-level vocabulary.
      shape("usp-tiny", 2, 64, 4, 2, 192, 256, false, 10000.0, 4096),
      shape("usp-small", 4, 256, 8, 4, 768, 256, false, 10000.0, 4096),
      shape("usp-base", 8, 512, 8, 4, 1536, 256, false, 10000.0, 4096),
  };
}
}  // namespace

ModelConfig ModelConfig::builtin(const std::string& name) {
  for (const auto& c : builtins())
    if (c.name == name) return c;
  std::string list;
  for (const auto& n : builtin_names()) list += (list.empty() ? "" : ", ") + n;
  throw UsageError("unknown model '" + name + "' (built-in: " + list + ")");
}

std::vector<std::string> ModelConfig::builtin_names() {
  std::vector<std::string> names;
  for (const auto& c : builtins()) names.push_back(c.name);
  return names;
}

std::string ModelConfig::str() const {
  std::ostringstream os;
  os << name << ": L=" << layers << " h=" << hidden << " a=" << heads << " g=" << kv_heads << " f=" << ffn
     << " v=" << vocab << (tied_embeddings ? " tied" : "");
  if (is_moe()) os << " E=" << experts << " k=" << experts_per_token;
  return os.str();
}

namespace {
constexpr EnumNames<Recompute, 3> kRecomputeNames{
    {{{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}}};
}  // namespace

const char* recompute_name(Recompute r) { return kRecomputeNames.name(r); }
Recompute parse_recompute(const std::string& s) { return kRecomputeNames.parse(s, "recompute"); }

}  // namespace usp
