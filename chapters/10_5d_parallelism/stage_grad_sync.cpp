#include "chapters/10_5d_parallelism/stage_grad_sync.hpp"

#include <algorithm>

#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch10 {

namespace {

// One unit's buffer cut into runs of parameters that reduce alike (the whole unit, or with the
// experts apart, the maximal runs of dense and of expert parameters), each a GradientBuffer (a
// view of the unit's buffer, offsets rebased to the run) with its parameters' store indices.
struct Run {
  bool experts = false;
  ch04::GradientBuffer buffer;
  std::vector<int> index;
};

std::vector<Run> unit_runs(ParamStore& store, int unit, bool experts_apart) {
  std::vector<Run> runs;
  const std::int64_t unit_begin = store.unit_range(unit).first;
  for (int i = 0; i < static_cast<int>(store.infos().size()); ++i) {
    const ParamInfo& p = store.infos()[static_cast<std::size_t>(i)];
    if (p.unit != unit) continue;
    const bool experts = experts_apart && p.expert >= 0;
    if (runs.empty() || runs.back().experts != experts) runs.push_back(Run{experts, {}, {}});
    ParamInfo local = p;
    local.offset = p.offset - unit_begin;  // into the unit's buffer; rebased to the run below
    runs.back().buffer.infos.push_back(local);
    runs.back().index.push_back(i);
  }
  const Tensor& grads = store.unit_grads(unit);  // [unit's elements] (pad_to 1: no padding)
  for (Run& r : runs) {
    std::vector<ParamInfo>& infos = r.buffer.infos;
    const std::int64_t begin = infos.front().offset, end = infos.back().offset + infos.back().numel;
    r.buffer.grad = grads.slice(begin, end);  // a view: the all-reduces write the unit's buffer
    for (ParamInfo& p : infos) p.offset -= begin;
  }
  return runs;
}

}  // namespace

StageGradSync::StageGradSync(ch08::StageParams& params, Communicator& replicas, Communicator* expert_replicas,
                             int passes, std::int64_t cap_bytes)
    : replicas_(replicas), expert_replicas_(expert_replicas), passes_(passes) {
  USP_CHECK(passes_ >= 1, "StageGradSync: at least one backward pass per step");
  ParamStore& store = params.store();
  place_.assign(store.infos().size(), Place{});
  reports_.assign(store.infos().size(), 0);
  for (int u : params.units())
    for (Run& run : unit_runs(store, u, expert_replicas_ != nullptr)) {
      if (run.experts) {
        expert_grads_.push_back(run.buffer.grad);
        continue;
      }
      const int b = static_cast<int>(syncs_.size());
      ch04::BucketPlan plan = ch04::bucket_plan(run.buffer.infos, cap_bytes, store.dtype());  // exercise 04.1
      syncs_.push_back(std::make_unique<ch04::GradientSync>(ch04::DpMode::bucketing, replicas, std::move(run.buffer),
                                                            std::move(plan)));
      ready_.emplace_back();
      syncs_.back()->attach(ready_.back());
      for (std::size_t j = 0; j < run.index.size(); ++j)
        place_[static_cast<std::size_t>(run.index[j])] = {b, static_cast<int>(j)};
    }
}

StageGradSync::~StageGradSync() = default;

void StageGradSync::attach(ModelHooks& hooks) {
  hooks.grad_ready = [this](int param) { grad_ready(param); };
}

void StageGradSync::begin_step() {
  std::fill(reports_.begin(), reports_.end(), 0);
  for (auto& sync : syncs_) sync->begin_backward(/*final_micro_batch=*/true);
}

void StageGradSync::grad_ready(int param) {
  const Place at = place_[static_cast<std::size_t>(param)];
  // Only the chunk's last backward of the step makes a gradient final; experts apart go elsewhere.
  if (++reports_[static_cast<std::size_t>(param)] != passes_ || at.buffer < 0) return;
  ready_[static_cast<std::size_t>(at.buffer)].grad_ready(at.param);  // exercise 04.2 launches
}

void StageGradSync::finish() {
  for (auto& sync : syncs_) sync->finish();
  // Experts held apart: each accumulated the losses of its whole ep group, so the sum over the
  // expert data-parallel group divided by dp·cp is the global batch's mean (chapter 09).
  for (Tensor& g : expert_grads_) {
    if (expert_replicas_->size() > 1) expert_replicas_->all_reduce(g, ReduceOp::sum);
    ops::scale_inplace(g, 1.0f / static_cast<float>(replicas_.size()));
  }
}

std::int64_t StageGradSync::collectives_per_step() const {
  std::int64_t n = 0;
  for (const auto& sync : syncs_) n += sync->collectives_per_step();
  return n;
}

}  // namespace usp::ch10
