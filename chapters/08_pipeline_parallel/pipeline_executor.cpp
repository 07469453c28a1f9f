#include "chapters/08_pipeline_parallel/pipeline_executor.hpp"

#include <algorithm>
#include <string>

#include "chapters/08_pipeline_parallel/schedule_replay.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/memory_tracker.hpp"
#include "common/trace.hpp"

namespace usp::ch08 {

PipelineExecutor::PipelineExecutor(Communicator& pp, const Schedule& s, std::vector<Model*> chunks,
                                   WeightGradQueue& queue)
    : pp_(pp), s_(s), chunks_(std::move(chunks)), queue_(queue), rank_(pp.rank()) {
  USP_CHECK(pp_.size() == s_.p, "PipelineExecutor: the schedule is for " + std::to_string(s_.p) +
                                    " ranks, the pipeline group has " + std::to_string(pp_.size()));
  USP_CHECK(static_cast<int>(chunks_.size()) == s_.v,
            "PipelineExecutor: " + std::to_string(s_.v) + " chunks per rank, given " + std::to_string(chunks_.size()));
}

int PipelineExecutor::tag_of(const Op& op) const {
  const Message msg = message_of(s_.layout, rank_, op);
  return (msg.mb * s_.layout.num_stages() + msg.from_stage) * 2 + (msg.gradient ? 1 : 0);
}

int PipelineExecutor::in_flight() const {
  int held = static_cast<int>(queue_.pending());  // B done, W not yet: the chunk's inputs still held
  for (const Model* m : chunks_) held += m->passes_held();
  return held;
}

Tensor PipelineExecutor::take(std::map<Key, Tensor>& from, Key key, const char* what, const Op& op) {
  const auto found = from.find(key);
  USP_CHECK(found != from.end(), "rank " + std::to_string(rank_) + ": " + op_name(op, s_.v) + " needs " + what +
                                     " that no earlier op of its list provided (the schedule is not valid)");
  Tensor t = std::move(found->second);
  from.erase(found);
  return t;
}

// Frees the buffers of the sends that are out (all of them, waiting, at the step's end).
void PipelineExecutor::reap_sends(bool wait_all) {
  auto done = [&](std::pair<WorkHandle, Tensor>& s) {
    if (wait_all) s.first->wait();
    return wait_all || s.first->test();
  };
  sending_.erase(std::remove_if(sending_.begin(), sending_.end(), done), sending_.end());
}

void PipelineExecutor::run_op(const Op& op, const std::vector<Batch>& micro_batches, float loss_scale,
                              ExecutedStep& step) {
  const int S = s_.layout.num_stages();
  const int stage = s_.layout.stage_of(rank_, op.chunk);
  const Key key{op.mb, op.chunk};
  Model& model = *chunks_[static_cast<std::size_t>(op.chunk)];
  const Batch& batch = micro_batches[static_cast<std::size_t>(op.mb)];
  const std::int64_t B = batch.inputs.dim(0), T = batch.inputs.dim(1);
  const Shape stream{B * T, model.config().hidden};  // [n, C]: what travels between stages
  // The chunk of this rank holding a neighbouring stage, or -1 when another rank holds it.
  auto local_chunk = [&](int other_stage) {
    return other_stage >= 0 && other_stage < S && s_.layout.rank_of(other_stage) == rank_
               ? s_.layout.chunk_of(other_stage)
               : -1;
  };

  switch (op.kind) {
    case OpKind::F: {
      StageInput in{.batch = B, .seq = T};
      if (stage == 0) in.tokens = batch.inputs;
      else if (const int c = local_chunk(stage - 1); c >= 0) in.x = take(act_out_, {op.mb, c}, "the previous stage's output", op);
      else in.x = take(act_in_, key, "a received activation", op);
      if (stage == S - 1) in.targets = batch.targets;
      Tensor out;
      const double loss = model.forward_stage(op.mb, in, out);
      if (stage == S - 1) step.loss_sum += loss;
      else act_out_[key] = out;
      break;
    }
    case OpKind::B:
    case OpKind::BW: {
      Tensor dy;
      if (stage < S - 1) {
        if (const int c = local_chunk(stage + 1); c >= 0) dy = take(grad_out_, {op.mb, c}, "the next stage's input gradient", op);
        else dy = take(grad_in_, key, "a received gradient", op);
      }
      Tensor dx;
      if (op.kind == OpKind::B) queue_.begin(key);
      model.backward_stage(op.mb, dy, loss_scale, dx);
      if (op.kind == OpKind::B) queue_.end();
      if (stage > 0) grad_out_[key] = dx;
      break;
    }
    case OpKind::W:
      queue_.run(key);
      break;
    case OpKind::send_act: {
      Tensor t = take(act_out_, key, "its forward's output", op);
      sending_.emplace_back(pp_.send_async(t, peer_rank(s_.layout, rank_, op), tag_of(op)), t);
      break;
    }
    case OpKind::send_grad: {
      Tensor t = take(grad_out_, key, "its backward's input gradient", op);
      sending_.emplace_back(pp_.send_async(t, peer_rank(s_.layout, rank_, op), tag_of(op)), t);
      break;
    }
    case OpKind::recv_act: {
      // The stage's input: the model keeps it as a saved activation until the backward.
      Tensor t = Tensor::empty(stream, model.options().activation_dtype, MemCategory::Activation, pp_.device());
      pp_.recv(t, peer_rank(s_.layout, rank_, op), tag_of(op));
      act_in_[key] = t;
      break;
    }
    case OpKind::recv_grad: {
      Tensor t = Tensor::empty(stream, DType::f32, MemCategory::Temporary, pp_.device());
      pp_.recv(t, peer_rank(s_.layout, rank_, op), tag_of(op));
      grad_in_[key] = t;
      break;
    }
  }
}

ExecutedStep PipelineExecutor::run(const std::vector<Batch>& micro_batches, float loss_scale) {
  USP_CHECK(static_cast<int>(micro_batches.size()) == s_.m,
            "PipelineExecutor::run: the schedule has " + std::to_string(s_.m) + " micro-batches, given " +
                std::to_string(micro_batches.size()));
  const std::vector<Op>& list = s_.ops[static_cast<std::size_t>(rank_)];
  ExecutedStep step;
  step.ops.reserve(list.size());
  Tracer& tracer = Tracer::instance();
  MemoryTracker& tracker = MemoryTracker::instance();
  pp_.barrier();  // a common start: the step's times are measured from here on every rank
  tracker.reset_peak();
  const double t0 = tracer.now_us();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Op& op = list[i];
    const double start = tracer.now_us();
    run_op(op, micro_batches, loss_scale, step);
    // On a GPU an op's kernels run after it returns: its span ends when they have (the compute
    // stream only; a send still waiting for its receiver goes on).
    synchronize_compute(pp_.device());
    const double end = tracer.now_us();
    if (is_compute(op.kind) && tracer.enabled()) tracer.add(op_name(op, s_.v), "compute", start, end);
    reap_sends(false);
    const int held = in_flight();
    step.ops.push_back({static_cast<int>(i), start - t0, end - t0, held,
                        tracker.current()[MemCategory::Activation]});
    step.peak_in_flight = std::max(step.peak_in_flight, held);
  }
  reap_sends(true);
  step.peak_activation_bytes = tracker.peak()[MemCategory::Activation];
  USP_CHECK(act_in_.empty() && act_out_.empty() && grad_in_.empty() && grad_out_.empty() && queue_.pending() == 0 &&
                in_flight() == 0,
            "rank " + std::to_string(rank_) + ": the step ended with tensors no op used (the schedule is not valid)");
  return step;
}

double PipelineExecutor::evaluate(const Batch& batch) {
  const StageLayout& layout = s_.layout;
  const int S = layout.num_stages();
  const std::int64_t B = batch.inputs.dim(0), T = batch.inputs.dim(1);
  double loss = 0;
  Tensor x;  // the output of the stage before, when this rank ran it
  std::vector<std::pair<WorkHandle, Tensor>> sent;
  for (int stage = 0; stage < S; ++stage) {
    if (layout.rank_of(stage) != rank_) continue;
    Model& model = *chunks_[static_cast<std::size_t>(layout.chunk_of(stage))];
    StageInput in{.batch = B, .seq = T};
    if (stage == 0) {
      in.tokens = batch.inputs;
    } else if (layout.rank_of(stage - 1) == rank_) {
      in.x = x;
    } else {  // [n, C]: what travels between stages
      in.x = Tensor::empty({B * T, model.config().hidden}, model.options().activation_dtype, MemCategory::Temporary,
                           pp_.device());
      pp_.recv(in.x, layout.rank_of(stage - 1), stage - 1);
    }
    if (stage == S - 1) in.targets = batch.targets;
    Tensor out;
    loss = model.evaluate_stage(in, out);
    if (stage < S - 1 && layout.rank_of(stage + 1) != rank_)
      sent.emplace_back(pp_.send_async(out, layout.rank_of(stage + 1), stage), out);
    x = out;
  }
  for (auto& [work, tensor] : sent) work->wait();
  return loss;
}

}  // namespace usp::ch08
