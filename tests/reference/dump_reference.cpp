// dump_reference OUT_DIR: runs one forward + backward of a small model and writes everything
// tests/reference/torch_reference.py needs to recompute it in PyTorch, for four models
// (OUT_DIR/untied, OUT_DIR/tied, and a mixture of experts dropless, OUT_DIR/moe, and with a
// capacity that drops assignments, OUT_DIR/moe_capacity):
//   config.json, model.safetensors   the checkpoint, through the checkpoint module
//   outputs.safetensors              inputs, targets [B, T] i32, logits [B·T, V] f32 and
//                                    grad.<name> f32 for every parameter
//   outputs.json                     {"loss": <double>, "aux_loss": <double>, ...}
// It also repeats the step under Recompute::selective and Recompute::full and requires the
// loss, the logits and every gradient to be bit-identical to Recompute::none (the same
// arithmetic, only done at another time). Exit status 1 if they are not.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/io/checkpoint.hpp"
#include "common/io/safetensors.hpp"
#include "common/json.hpp"
#include "common/model/config.hpp"
#include "common/model/model.hpp"
#include "common/model/params.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#include "tests/support/small_model.hpp"

using namespace usp;

namespace {

constexpr std::uint64_t kSeed = 2024;
constexpr std::int64_t kBatch = 3, kSeq = 17;  // B·T = 51 rows: not a multiple of a SIMD width or a block size

// L=2, h=64, a=4 over g=2 kv heads (GQA, head dim 16), f=160, v=256.
// init_std larger than the usual 0.02 so that attention is far from uniform and logits far
// from flat: every path (RoPE, the mask, the softmax) then shapes the result visibly.
ModelConfig reference_config(bool tied) {
  return testing::small_model({.name = tied ? "reference-tied" : "reference", .vocab = 256, .hidden = 64,
                               .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 160, .max_seq = 64,
                               .init_std = 0.15, .tied_embeddings = tied});
}

// The same with a Mixtral-style MLP: 4 experts of ffn 48, top-2, aux coefficient 0.05 (large, so
// that its gradient shows); capacity factor 0 (dropless) or 1.0 (cap = ceil(51·2/4) = 26 of each
// expert's assignments: the busiest experts drop some).
ModelConfig moe_reference_config(double capacity_factor) {
  ModelConfig c = reference_config(false);
  c.name = capacity_factor > 0 ? "reference-moe-capacity" : "reference-moe";
  c.ffn = 48;
  c.experts = 4;
  c.experts_per_token = 2;
  c.router_aux_loss_coef = 0.05;
  c.capacity_factor = capacity_factor;
  c.validate();
  return c;
}

// Norm weights start at 1, where a norm that forgot its weight would look right; move them.
void perturb_norm_weights(ParamStore& params) {
  for (const ParamInfo& p : params.infos()) {
    if (!p.is_norm) continue;
    float* w = params.param(p.name).data<float>();
    for (std::int64_t j = 0; j < p.numel; ++j)
      w[j] = 1.0f + 0.2f * rng::normal(kSeed, p.name + " perturbation", static_cast<std::uint64_t>(j));
  }
}


struct StepResult {
  double loss = 0, aux = 0;
  Tensor logits;  // [B·T, V] copy
  Tensor grads;   // flat gradient copy
};

StepResult run_step(ParamStore& params, Recompute mode, const Tensor& inputs, const Tensor& targets) {
  params.zero_grad();
  Model model(params, {mode, DType::f32});
  StepResult r;
  r.loss = model.forward(inputs, targets);
  r.aux = model.aux_loss();
  r.logits = model.logits().clone(MemCategory::Temporary);  // backward releases the logits
  model.backward(1.0f);
  r.grads = params.flat_grad().clone(MemCategory::Temporary);
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The first parameter whose gradient differs between two flat gradient copies, or "".
std::string first_differing_grad(const ParamStore& params, const Tensor& a, const Tensor& b) {
  for (const ParamInfo& p : params.infos()) {
    const std::size_t off = static_cast<std::size_t>(p.offset) * sizeof(float);
    if (std::memcmp(static_cast<const char*>(a.raw()) + off, static_cast<const char*>(b.raw()) + off,
                    static_cast<std::size_t>(p.numel) * sizeof(float)) != 0)
      return p.name;
  }
  return "";
}

// Writes one model's files into dir; returns false if a recomputation mode differs.
bool dump(const std::string& dir, const ModelConfig& cfg) {
  ParamStore params(cfg);
  params.init(kSeed);
  perturb_norm_weights(params);
  // Step 0 of the synthetic corpus: inputs, targets [B, T] i32 (targets = inputs shifted by one).
  const Batch batch = make_dataset("synthetic", kSeed)->batch(0, 0, kBatch, kSeq);
  const Tensor& inputs = batch.inputs;
  const Tensor& targets = batch.targets;

  make_dirs(dir);
  save_checkpoint(dir, params);  // config.json + model.safetensors

  const StepResult ref = run_step(params, Recompute::none, inputs, targets);
  std::vector<NamedTensor> out = {{"inputs", inputs}, {"targets", targets}, {"logits", ref.logits}};
  for (const ParamInfo& p : params.infos()) out.push_back({"grad." + p.name, ref.grads.view(p.offset, p.shape)});
  write_safetensors(dir + "/outputs.safetensors", out);

  bool ok = true;
  JsonWriter json;
  json.begin_object().field("loss", ref.loss).field("aux_loss", ref.aux).key("recompute_bit_identical").begin_object();
  for (Recompute mode : {Recompute::selective, Recompute::full}) {
    const StepResult r = run_step(params, mode, inputs, targets);
    std::string why;
    if (r.loss != ref.loss) why = "the loss differs";
    else if (!same_bits(r.logits, ref.logits)) why = "the logits differ";
    else if (!same_bits(r.grads, ref.grads)) why = "the gradient of " + first_differing_grad(params, r.grads, ref.grads) + " differs";
    json.field(recompute_name(mode), why.empty());
    std::printf("%s: recompute %-9s vs none: %s\n", cfg.str().c_str(), recompute_name(mode),
                why.empty() ? "loss, logits and gradients bit-identical" : ("MISMATCH: " + why).c_str());
    ok = ok && why.empty();
  }
  json.end_object().end_object().write_file(dir + "/outputs.json");
  std::printf("%s: loss %.9f, wrote %s/{config.json, model.safetensors, outputs.safetensors, outputs.json}\n",
              cfg.str().c_str(), ref.loss, dir.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_reference OUT_DIR\n");
    return 2;
  }
  try {
    const std::string out = argv[1];
    bool ok = dump(out + "/untied", reference_config(false));
    ok = dump(out + "/tied", reference_config(true)) && ok;
    ok = dump(out + "/moe", moe_reference_config(0)) && ok;
    ok = dump(out + "/moe_capacity", moe_reference_config(1.0)) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dump_reference: %s\n", e.what());
    return 1;
  }
}
