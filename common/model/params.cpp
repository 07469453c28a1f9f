#include "model/params.hpp"

#include "rng.hpp"

namespace usp {

std::vector<ParamInfo> llama_param_layout(const ModelConfig& c) {
  std::vector<ParamInfo> out;
  std::int64_t offset = 0;
  auto add = [&](std::string name, Shape shape, int unit, bool is_norm) {
    ParamInfo p;
    p.name = std::move(name);
    p.shape = std::move(shape);
    p.numel = shape_numel(p.shape);
    p.offset = offset;
    p.unit = unit;
    p.is_norm = is_norm;
    offset += p.numel;
    out.push_back(std::move(p));
  };
  const std::int64_t h = c.hidden, f = c.ffn;
  add("model.embed_tokens.weight", {c.vocab, h}, 0, false);
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string pre = "model.layers." + std::to_string(i) + ".";
    const int unit = static_cast<int>(i) + 1;
    add(pre + "input_layernorm.weight", {h}, unit, true);
    add(pre + "self_attn.q_proj.weight", {c.q_dim(), h}, unit, false);
    add(pre + "self_attn.k_proj.weight", {c.kv_dim(), h}, unit, false);
    add(pre + "self_attn.v_proj.weight", {c.kv_dim(), h}, unit, false);
    add(pre + "self_attn.o_proj.weight", {h, c.q_dim()}, unit, false);
    add(pre + "post_attention_layernorm.weight", {h}, unit, true);
    add(pre + "mlp.gate_proj.weight", {f, h}, unit, false);
    add(pre + "mlp.up_proj.weight", {f, h}, unit, false);
    add(pre + "mlp.down_proj.weight", {h, f}, unit, false);
  }
  const int last = static_cast<int>(c.layers) + 1;
  add("model.norm.weight", {h}, last, true);
  if (!c.tied_embeddings) add("lm_head.weight", {c.vocab, h}, last, false);
  return out;
}

ParamStore::ParamStore(const ModelConfig& config, DType dtype, Device device, bool with_grads)
    : config_(config), dtype_(dtype), infos_(llama_param_layout(config)) {
  config_.validate();
  numel_ = infos_.back().offset + infos_.back().numel;
  flat_ = Tensor::zeros({numel_}, dtype, MemCategory::Parameter, device);
  if (with_grads) flat_grad_ = Tensor::zeros({numel_}, dtype, MemCategory::Gradient, device);
}

int ParamStore::index(const std::string& name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return static_cast<int>(i);
  throw Error("ParamStore: no parameter named '" + name + "'");
}

std::pair<std::int64_t, std::int64_t> ParamStore::unit_range(int unit) const {
  std::int64_t begin = -1, end = -1;
  for (const auto& p : infos_) {
    if (p.unit != unit) continue;
    if (begin < 0) begin = p.offset;
    end = p.offset + p.numel;
  }
  USP_CHECK(begin >= 0, "ParamStore::unit_range: no unit " + std::to_string(unit));
  return {begin, end};
}

Tensor ParamStore::param(int i) const {
  const auto& p = infos_.at(static_cast<std::size_t>(i));
  return flat_.view(p.offset, p.shape);
}

Tensor ParamStore::grad(int i) const {
  USP_CHECK(has_grads(), "ParamStore::grad: this store has no gradients");
  const auto& p = infos_.at(static_cast<std::size_t>(i));
  return flat_grad_.view(p.offset, p.shape);
}

void ParamStore::init(std::uint64_t seed) {
  for (std::size_t i = 0; i < infos_.size(); ++i) {
    const auto& p = infos_[i];
    // Values are drawn in fp32 into a tracked temporary, then stored in the parameter dtype.
    Tensor values = Tensor::empty(p.shape, DType::f32, MemCategory::Temporary);
    float* v = values.data<float>();
    if (p.is_norm) {
      for (std::int64_t j = 0; j < p.numel; ++j) v[j] = 1.0f;
    } else {
      const auto key = rng::make_key(seed, rng::hash_name(p.name));
      const float std = static_cast<float>(config_.init_std);
      for (std::int64_t j = 0; j < p.numel; ++j) v[j] = rng::normal(key, static_cast<std::uint64_t>(j)) * std;
    }
    Tensor dst = param(static_cast<int>(i));
    if (dtype_ == DType::f32) {
      dst.copy_from(values);
    } else {
      Tensor narrow = Tensor::empty(p.shape, dtype_, MemCategory::Temporary);
      convert_from_float(v, dtype_, narrow.raw(), static_cast<std::size_t>(p.numel));
      dst.copy_from(narrow);
    }
  }
}

void ParamStore::zero_grad() {
  if (has_grads()) flat_grad_.zero();
}

}  // namespace usp
