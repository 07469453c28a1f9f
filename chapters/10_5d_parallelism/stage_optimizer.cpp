#include "chapters/10_5d_parallelism/stage_optimizer.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch10 {

StageOptimizer::StageOptimizer(ch08::StageParams& params, const AdamWConfig& cfg, int zero, Communicator& replicas,
                               Communicator* expert_replicas)
    : params_(params), zero_(zero), replicas_(replicas), expert_replicas_(expert_replicas) {
  ParamStore& store = params_.store();
  // Without expert parallelism every replica holds every expert: they average like the rest.
  if (expert_replicas_ != nullptr)
    for (int u : params_.units()) {
      const std::int64_t begin = store.unit_range(u).first;
      std::vector<std::pair<std::int64_t, std::int64_t>> runs;
      for (const ParamInfo& p : store.infos()) {
        if (p.unit != u || p.expert < 0) continue;
        const std::int64_t b = p.offset - begin, e = b + p.numel;
        if (!runs.empty() && runs.back().second == b) runs.back().second = e;
        else runs.emplace_back(b, e);
      }
      if (!runs.empty()) expert_runs_.emplace_back(u, std::move(runs));
    }
  if (zero_ == 0) return;
  USP_CHECK(zero_ == 1 && expert_runs_.empty(), "StageOptimizer: ZeRO-1 of a dense model only");
  // The packed vector: the held units one after the other.
  std::int64_t total = 0;
  for (int u : params_.units()) {
    packed_offset_.push_back(total);
    const auto [begin, end] = store.unit_range(u);
    total += end - begin;
  }
  const std::int64_t d = replicas_.size(), r = replicas_.rank();
  shard_ = (total + d - 1) / d;
  const std::int64_t lo = std::min(total, r * shard_), hi = std::min(total, lo + shard_);
  for (std::size_t i = 0; i < params_.units().size(); ++i) {
    const int u = params_.units()[i];
    const auto [begin, end] = store.unit_range(u);
    const std::int64_t a = std::max(lo, packed_offset_[i]), b = std::min(hi, packed_offset_[i] + (end - begin));
    if (a >= b) continue;
    Piece p{u, a - packed_offset_[i], a - lo, b - a, nullptr};
    const Tensor values = store.unit_params(u).slice(p.in_unit, p.in_unit + p.length);
    p.adam = std::make_unique<AdamW>(store.infos(), cfg, begin + p.in_unit, begin + p.in_unit + p.length, values);
    pieces_.push_back(std::move(p));
  }
}

StageOptimizer::~StageOptimizer() = default;

std::int64_t StageOptimizer::state_elements() const {
  if (zero_ == 0) return params_.numel();
  std::int64_t n = 0;
  for (const Piece& p : pieces_) n += p.length;
  return n;
}

void StageOptimizer::step() {
  if (zero_ == 1) return zero1_step();
  average_gradients();
  params_.step();
}

void StageOptimizer::average_gradients() {
  ParamStore& store = params_.store();
  // Dense parameters: the mean over the replicas. With experts, each unit's dense runs are the
  // gaps between its expert runs.
  for (int u : params_.units()) {
    Tensor& g = store.unit_grads(u);
    const auto [begin, end] = store.unit_range(u);
    const auto found = std::find_if(expert_runs_.begin(), expert_runs_.end(), [&](const auto& e) { return e.first == u; });
    if (found == expert_runs_.end()) {
      if (replicas_.size() > 1) replicas_.all_reduce(g, ReduceOp::avg);
      continue;
    }
    std::int64_t at = 0;
    for (auto [b, e] : found->second) {
      if (b > at && replicas_.size() > 1) {
        Tensor dense = g.slice(at, b);
        replicas_.all_reduce(dense, ReduceOp::avg);
      }
      Tensor experts = g.slice(b, e);
      if (expert_replicas_->size() > 1) expert_replicas_->all_reduce(experts, ReduceOp::sum);
      ops::scale_inplace(experts, 1.0f / static_cast<float>(replicas_.size()));
      at = e;
    }
    if (at < end - begin && replicas_.size() > 1) {
      Tensor dense = g.slice(at, end - begin);
      replicas_.all_reduce(dense, ReduceOp::avg);
    }
  }
}

void StageOptimizer::zero1_step() {
  ParamStore& store = params_.store();
  const std::vector<int>& units = params_.units();
  const std::int64_t d = replicas_.size();
  // Gradients: packed, reduce-scattered (averaged) into this rank's shard.
  Tensor packed = Tensor::zeros({d * shard_}, store.dtype(), MemCategory::CommBuffer, store.device());
  for (std::size_t i = 0; i < units.size(); ++i) {
    const Tensor& g = store.unit_grads(units[i]);
    packed.slice(packed_offset_[i], packed_offset_[i] + g.numel()).copy_from(g);
  }
  Tensor grad_shard = Tensor::empty({shard_}, store.dtype(), MemCategory::CommBuffer, store.device());
  replicas_.reduce_scatter(packed, grad_shard, ReduceOp::avg);
  // The update of the shard, piece by piece (each piece lies in one unit's buffer).
  Tensor value_shard = Tensor::zeros({shard_}, store.dtype(), MemCategory::CommBuffer, store.device());
  for (Piece& p : pieces_) {
    Tensor values = store.unit_params(p.unit).slice(p.in_unit, p.in_unit + p.length);
    p.adam->step_range(values, grad_shard.slice(p.in_shard, p.in_shard + p.length));
    value_shard.slice(p.in_shard, p.in_shard + p.length).copy_from(values);
  }
  // Every replica's updated shard, back into the units.
  packed.zero();
  replicas_.all_gather(value_shard, packed);
  for (std::size_t i = 0; i < units.size(); ++i) {
    Tensor& w = store.unit_params(units[i]);
    w.copy_from(packed.slice(packed_offset_[i], packed_offset_[i] + w.numel()));
  }
}

}  // namespace usp::ch10
