#include "chapters/04_data_parallel/gradient_sync.hpp"

#include "common/trace.hpp"

#include "common/enum_names.hpp"

namespace usp::ch04 {

namespace {
constexpr EnumNames<DpMode, 3> kDpModeNames{
    {{{DpMode::naive, "naive"}, {DpMode::overlap, "overlap"}, {DpMode::bucketing, "bucketing"}}}};
}  // namespace

const char* dp_mode_name(DpMode mode) { return kDpModeNames.name(mode); }
DpMode parse_dp_mode(const std::string& name) { return kDpModeNames.parse(name, "--dp-mode"); }

const std::vector<DpMode>& all_dp_modes() {
  static const std::vector<DpMode> modes = [] {
    std::vector<DpMode> out;
    for (const auto& entry : kDpModeNames.entries) out.push_back(entry.first);
    return out;
  }();
  return modes;
}

GradientBuffer whole_model(ParamStore& params) {
  USP_CHECK(params.has_grads() && params.flat_grad().defined(), "GradientSync needs a store with a flat gradient buffer");
  return GradientBuffer{params.flat_grad(), params.infos()};
}

GradientSync::GradientSync(DpMode mode, Communicator& comm, GradientBuffer buffer, BucketPlan plan)
    : mode_(mode), comm_(comm), buffer_(std::move(buffer)), plan_(std::move(plan)) {
  USP_CHECK(buffer_.grad.defined(), "GradientSync needs a gradient buffer");
}

Tensor GradientSync::grad(int param) const {
  const ParamInfo& p = buffer_.infos[static_cast<std::size_t>(param)];
  return buffer_.grad.slice(p.offset, p.offset + p.numel);
}

void GradientSync::attach(ModelHooks& hooks) {
  hooks.grad_ready = [this](int param) { grad_ready(param); };
}

void GradientSync::begin_backward(bool final_micro_batch) {
  USP_CHECK(!syncing_, "GradientSync::begin_backward: the previous final backward was not finished");
  syncing_ = final_micro_batch;
  if (syncing_ && mode_ == DpMode::bucketing)
    buckets_ = start_bucket_launches(plan_, buffer_.infos.size());
}

namespace {

// With the tracer on, the instant a collective is launched, as a zero-length span on the "launch"
// lane: when the trainer asked for it (the "comm" span says when the communicator ran it).
void trace_launch() {
  Tracer& t = Tracer::instance();
  if (!t.enabled()) return;
  const double now = t.now_us();
  t.add("all_reduce launched", "launch", now, now);
}

}  // namespace

void GradientSync::grad_ready(int param) {
  if (!syncing_) return;  // a non-final micro-batch: accumulate locally, say nothing
  if (mode_ == DpMode::overlap) {
    Tensor g = grad(param);
    pending_.push_back(comm_.all_reduce_async(g, ReduceOp::avg));
    trace_launch();
  } else if (mode_ == DpMode::bucketing) {
    const std::size_t before = buckets_.launched.size();
    on_grad_ready(buckets_, param, comm_, buffer_.grad);
    for (std::size_t i = before; i < buckets_.launched.size(); ++i) trace_launch();
  }
}

void GradientSync::finish() {
  USP_CHECK(syncing_, "GradientSync::finish without a final backward");
  syncing_ = false;
  if (mode_ == DpMode::naive) {
    // Backward is over; now, one parameter after the other, in the order backward produced them.
    for (int i = static_cast<int>(buffer_.infos.size()) - 1; i >= 0; --i) {
      Tensor g = grad(i);
      trace_launch();
      comm_.all_reduce(g, ReduceOp::avg);
    }
    return;
  }
  if (mode_ == DpMode::bucketing) {
    BucketLaunchState state = std::move(buckets_);
    buckets_ = BucketLaunchState{};
    finish_bucket_launches(state);
    return;
  }
  std::vector<WorkHandle> launched = std::move(pending_);
  pending_.clear();
  if (static_cast<std::int64_t>(launched.size()) != collectives_per_step()) {
    for (auto& w : launched) w->wait();
    throw Error("overlap: " + std::to_string(launched.size()) + " gradients were reported ready, expected " +
                std::to_string(collectives_per_step()));
  }
  for (auto& w : launched) w->wait();
}

std::int64_t GradientSync::collectives_per_step() const {
  return mode_ == DpMode::bucketing ? static_cast<std::int64_t>(plan_.buckets.size())
                                    : static_cast<std::int64_t>(buffer_.infos.size());
}

}  // namespace usp::ch04
