#include "common/model/params.hpp"

#include <algorithm>

#include "common/rng.hpp"

namespace usp {

std::int64_t ParamInfo::full_index(std::int64_t j) const {
  if (split_dim < 0) return j;
  if (split_dim == 0) return shard_begin * full_shape[1] + j;  // whole rows: one contiguous block
  const std::int64_t cols = shape[1], row = j / cols, col = j % cols;
  return row * full_shape[1] + shard_begin + col;
}

void check_tp_shard(const ModelConfig& c, TpShard tp) {
  if (tp.size < 1 || tp.rank < 0 || tp.rank >= tp.size)
    throw UsageError("tensor-parallel shard " + std::to_string(tp.rank) + " of " + std::to_string(tp.size) +
                     " does not exist");
  auto divides = [&](std::int64_t n, const char* what) {
    if (n % tp.size != 0)
      throw UsageError("tensor parallelism t = " + std::to_string(tp.size) + " must divide the " + what + " (" +
                       std::to_string(n) + ")");
  };
  if (c.is_moe() && tp.size > 1)
    throw UsageError("tensor parallelism t = " + std::to_string(tp.size) + " with a mixture of experts: this course "
                     "spreads the experts over ranks with expert parallelism (chapter 09), not tensor parallelism");
  divides(c.heads, "number of heads");
  divides(c.kv_heads, "number of kv heads; this course does not replicate kv heads over TP ranks");
  divides(c.ffn, "ffn size");
  divides(c.vocab, "vocabulary size (the embedding and the head are split by vocabulary)");
}

void check_ep_shard(const ModelConfig& c, EpShard ep) {
  if (ep.size < 1 || ep.rank < 0 || ep.rank >= ep.size)
    throw UsageError("expert-parallel shard " + std::to_string(ep.rank) + " of " + std::to_string(ep.size) +
                     " does not exist");
  if (ep.size == 1) return;
  if (!c.is_moe())
    throw UsageError("expert parallelism ep = " + std::to_string(ep.size) + " needs a model with experts");
  if (c.experts % ep.size != 0)
    throw UsageError("the " + std::to_string(c.experts) + " experts cannot be spread evenly over ep = " +
                     std::to_string(ep.size) + " ranks (ep must divide the number of experts)");
}

std::vector<ParamInfo> llama_param_layout(const ModelConfig& c, TpShard tp, EpShard ep) {
  check_tp_shard(c, tp);
  check_ep_shard(c, ep);
  std::vector<ParamInfo> out;
  std::int64_t offset = 0;
  // split_dim: -1 replicated; 0 or 1: that dimension is cut into tp.size equal shards.
  auto add = [&](std::string name, Shape full, int unit, bool is_norm, int split_dim) {
    ParamInfo p;
    p.name = std::move(name);
    p.full_shape = full;
    p.split_dim = tp.size > 1 ? split_dim : -1;
    if (p.split_dim >= 0) {
      const std::int64_t n = full[static_cast<std::size_t>(p.split_dim)] / tp.size;
      full[static_cast<std::size_t>(p.split_dim)] = n;
      p.shard_begin = tp.rank * n;
    }
    p.shape = std::move(full);
    p.numel = shape_numel(p.shape);
    p.offset = offset;
    p.unit = unit;
    p.is_norm = is_norm;
    offset += p.numel;
    out.push_back(std::move(p));
  };
  const std::int64_t h = c.hidden, f = c.ffn;
  constexpr int replicated = -1, column_parallel = 0, row_parallel = 1;
  add("model.embed_tokens.weight", {c.vocab, h}, 0, false, column_parallel);  // vocab rows
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const std::string pre = "model.layers." + std::to_string(i) + ".";
    const int unit = static_cast<int>(i) + 1;
    add(pre + "input_layernorm.weight", {h}, unit, true, replicated);
    add(pre + "self_attn.q_proj.weight", {c.q_dim(), h}, unit, false, column_parallel);
    add(pre + "self_attn.k_proj.weight", {c.kv_dim(), h}, unit, false, column_parallel);
    add(pre + "self_attn.v_proj.weight", {c.kv_dim(), h}, unit, false, column_parallel);
    add(pre + "self_attn.o_proj.weight", {h, c.q_dim()}, unit, false, row_parallel);
    add(pre + "post_attention_layernorm.weight", {h}, unit, true, replicated);
    if (!c.is_moe()) {
      add(pre + "mlp.gate_proj.weight", {f, h}, unit, false, column_parallel);
      add(pre + "mlp.up_proj.weight", {f, h}, unit, false, column_parallel);
      add(pre + "mlp.down_proj.weight", {h, f}, unit, false, row_parallel);
      continue;
    }
    add(pre + "block_sparse_moe.gate.weight", {c.experts, h}, unit, false, replicated);
    const std::int64_t local = c.experts / ep.size;
    for (std::int64_t e = ep.rank * local; e < (ep.rank + 1) * local; ++e) {
      const std::string ex = pre + "block_sparse_moe.experts." + std::to_string(e) + ".";
      for (auto [w, shape] : {std::pair{"w1", Shape{f, h}}, std::pair{"w2", Shape{h, f}}, std::pair{"w3", Shape{f, h}}}) {
        add(ex + w + ".weight", shape, unit, false, replicated);
        out.back().expert = static_cast<int>(e);
      }
    }
  }
  const int last = static_cast<int>(c.layers) + 1;
  add("model.norm.weight", {h}, last, true, replicated);
  if (!c.tied_embeddings) add("lm_head.weight", {c.vocab, h}, last, false, column_parallel);
  return out;
}

ParamStore::ParamStore(const ModelConfig& config, DType dtype, Device device, bool with_grads)
    : ParamStore(config, dtype, device, StoreLayout{Residency::flat, with_grads ? Residency::flat : Residency::none, 1}) {}

ParamStore::ParamStore(const ModelConfig& config, DType dtype, Device device, StoreLayout layout)
    : config_(config), dtype_(dtype), infos_(), layout_(layout), device_(device) {
  config_.validate();
  infos_ = llama_param_layout(config_, layout_.tp, layout_.ep);
  USP_CHECK(layout_.pad_to >= 1, "ParamStore: pad_to must be >= 1");
  USP_CHECK(layout_.params != Residency::none, "ParamStore: parameters must be flat or per unit");
  numel_ = infos_.back().offset + infos_.back().numel;
  for (int u = 0; u < num_units(); ++u) unit_ranges_.push_back(unit_range(u));
  const std::int64_t padded = padded_numel();
  // With pad_to = 1 (the default) the flat tensors are the allocations themselves, as before.
  auto flat_pair = [&](MemCategory category, Tensor& padded_t, Tensor& view) {
    padded_t = Tensor::zeros({padded}, dtype, category, device);
    view = padded == numel_ ? padded_t : padded_t.view(0, {numel_});
  };
  if (layout_.params == Residency::flat) flat_pair(MemCategory::Parameter, padded_flat_, flat_);
  if (layout_.grads == Residency::flat) flat_pair(MemCategory::Gradient, padded_flat_grad_, flat_grad_);
  unit_params_.resize(static_cast<std::size_t>(num_units()));
  unit_grads_.resize(static_cast<std::size_t>(num_units()));
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

std::int64_t ParamStore::padded_numel() const {
  return (numel_ + layout_.pad_to - 1) / layout_.pad_to * layout_.pad_to;
}

std::int64_t ParamStore::unit_padded_numel(int unit) const {
  check_unit(unit, "unit_padded_numel");
  const auto [begin, end] = unit_ranges_[static_cast<std::size_t>(unit)];
  return (end - begin + layout_.pad_to - 1) / layout_.pad_to * layout_.pad_to;
}

void ParamStore::check_unit(int unit, const char* what) const {
  USP_CHECK(unit >= 0 && unit < num_units(),
            std::string("ParamStore::") + what + ": no unit " + std::to_string(unit) + " (the model has " +
                std::to_string(num_units()) + ")");
}

namespace {

// The view of parameter p inside the buffer of its unit, or an Error naming what is missing.
Tensor unit_view(const std::vector<Tensor>& buffers, const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges,
                 const ParamInfo& p, const char* what) {
  const Tensor& buffer = buffers[static_cast<std::size_t>(p.unit)];
  if (!buffer.defined())
    throw Error(std::string("ParamStore: the ") + what + " of " + p.name + " are not materialized (unit " +
                std::to_string(p.unit) + " is released; materialize it before the unit runs)");
  return buffer.view(p.offset - ranges[static_cast<std::size_t>(p.unit)].first, p.shape);
}

}  // namespace

Tensor ParamStore::param(int i) const {
  const auto& p = infos_.at(static_cast<std::size_t>(i));
  if (layout_.params == Residency::per_unit) return unit_view(unit_params_, unit_ranges_, p, "parameters");
  return flat_.view(p.offset, p.shape);
}

Tensor ParamStore::grad(int i) const {
  USP_CHECK(has_grads(), "ParamStore::grad: this store has no gradients");
  const auto& p = infos_.at(static_cast<std::size_t>(i));
  if (layout_.grads == Residency::per_unit) return unit_view(unit_grads_, unit_ranges_, p, "gradients");
  return flat_grad_.view(p.offset, p.shape);
}

void ParamStore::materialize_params(int unit) {
  check_unit(unit, "materialize_params");
  USP_CHECK(layout_.params == Residency::per_unit, "ParamStore::materialize_params: parameters are not kept per unit");
  Tensor& b = unit_params_[static_cast<std::size_t>(unit)];
  USP_CHECK(!b.defined(), "ParamStore::materialize_params: unit " + std::to_string(unit) + " already is");
  b = Tensor::zeros({unit_padded_numel(unit)}, dtype_, MemCategory::Parameter, device_);
}

void ParamStore::release_params(int unit) {
  check_unit(unit, "release_params");
  USP_CHECK(params_materialized(unit) && layout_.params == Residency::per_unit,
            "ParamStore::release_params: unit " + std::to_string(unit) + " is not a materialized per-unit buffer");
  unit_params_[static_cast<std::size_t>(unit)] = Tensor();
}

bool ParamStore::params_materialized(int unit) const {
  check_unit(unit, "params_materialized");
  return layout_.params == Residency::flat || unit_params_[static_cast<std::size_t>(unit)].defined();
}

void ParamStore::materialize_grads(int unit) {
  check_unit(unit, "materialize_grads");
  USP_CHECK(layout_.grads == Residency::per_unit, "ParamStore::materialize_grads: gradients are not kept per unit");
  Tensor& b = unit_grads_[static_cast<std::size_t>(unit)];
  USP_CHECK(!b.defined(), "ParamStore::materialize_grads: unit " + std::to_string(unit) + " already is");
  b = Tensor::zeros({unit_padded_numel(unit)}, dtype_, MemCategory::Gradient, device_);
}

void ParamStore::release_grads(int unit) {
  check_unit(unit, "release_grads");
  USP_CHECK(layout_.grads == Residency::per_unit && grads_materialized(unit),
            "ParamStore::release_grads: unit " + std::to_string(unit) + " is not a materialized per-unit buffer");
  unit_grads_[static_cast<std::size_t>(unit)] = Tensor();
}

bool ParamStore::grads_materialized(int unit) const {
  check_unit(unit, "grads_materialized");
  if (layout_.grads == Residency::none) return false;
  return layout_.grads == Residency::flat || unit_grads_[static_cast<std::size_t>(unit)].defined();
}

Tensor& ParamStore::unit_params(int unit) {
  check_unit(unit, "unit_params");
  USP_CHECK(layout_.params == Residency::per_unit, "ParamStore::unit_params: parameters are flat (use padded_flat())");
  Tensor& b = unit_params_[static_cast<std::size_t>(unit)];
  USP_CHECK(b.defined(), "ParamStore::unit_params: unit " + std::to_string(unit) + " is not materialized");
  return b;
}

Tensor& ParamStore::unit_grads(int unit) {
  check_unit(unit, "unit_grads");
  USP_CHECK(layout_.grads == Residency::per_unit, "ParamStore::unit_grads: gradients are not kept per unit");
  Tensor& b = unit_grads_[static_cast<std::size_t>(unit)];
  USP_CHECK(b.defined(), "ParamStore::unit_grads: unit " + std::to_string(unit) + " is not materialized");
  return b;
}

int ParamStore::materialized_param_units() const {
  int n = 0;
  for (const Tensor& b : unit_params_) n += b.defined() ? 1 : 0;
  return n;
}

namespace {

// Elements [j0, j1) of parameter p by the initialisation rule, in fp32, to v[0, j1 - j0).
void init_values(const ParamInfo& p, std::uint64_t seed, double init_std, std::int64_t j0, std::int64_t j1, float* v) {
  if (p.is_norm) {
    for (std::int64_t j = j0; j < j1; ++j) v[j - j0] = 1.0f;
    return;
  }
  const auto key = rng::make_key(seed, rng::hash_name(p.name));
  const float std = static_cast<float>(init_std);
  for (std::int64_t j = j0; j < j1; ++j) v[j - j0] = rng::normal(key, static_cast<std::uint64_t>(p.full_index(j))) * std;
}

// dst (any float dtype, any device) = the fp32 values, rounded to dst's dtype.
void store_values(const Tensor& values, Tensor dst) {
  if (dst.dtype() == DType::f32) {
    dst.copy_from(values);
  } else {
    Tensor narrow = Tensor::empty(values.shape(), dst.dtype(), MemCategory::Temporary);
    convert_from_float(values.data<float>(), dst.dtype(), narrow.raw(), static_cast<std::size_t>(values.numel()));
    dst.copy_from(narrow);
  }
}

}  // namespace

void ParamStore::init(std::uint64_t seed) {
  for (std::size_t i = 0; i < infos_.size(); ++i) {
    const auto& p = infos_[i];
    // Values are drawn in fp32 into a tracked temporary, then stored in the parameter dtype.
    Tensor values = Tensor::empty(p.shape, DType::f32, MemCategory::Temporary);
    init_values(p, seed, config_.init_std, 0, p.numel, values.data<float>());
    store_values(values, param(static_cast<int>(i)));
  }
}

void ParamStore::init_range(std::uint64_t seed, std::int64_t begin, std::int64_t end, Tensor& out) const {
  USP_CHECK(0 <= begin && begin <= end && end <= numel_,
            "ParamStore::init_range: [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside the " +
                std::to_string(numel_) + " parameters");
  USP_CHECK(out.defined() && out.numel() >= end - begin,
            "ParamStore::init_range: out holds fewer than " + std::to_string(end - begin) + " elements");
  out.zero();
  for (const auto& p : infos_) {
    const std::int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.numel);
    if (lo >= hi) continue;
    Tensor values = Tensor::empty({hi - lo}, DType::f32, MemCategory::Temporary);
    init_values(p, seed, config_.init_std, lo - p.offset, hi - p.offset, values.data<float>());
    store_values(values, out.view(lo - begin, {hi - lo}));
  }
}

void ParamStore::zero_grad() {
  if (layout_.grads == Residency::flat) padded_flat_grad_.zero();
  for (Tensor& b : unit_grads_)
    if (b.defined()) b.zero();
}

}  // namespace usp
