// The ZeRO stages (see zero_trainer.hpp): setup of what each rank keeps, the hooks that run the
// per-unit plan inside forward and backward, and the optimizer step of each stage.
#include "chapters/05_zero/zero_trainer.hpp"

#include <algorithm>

#include "common/ops/ops.hpp"
#include "common/trace.hpp"
#include "chapters/05_zero/zero1_step.hpp"

namespace usp::ch05 {

struct ZeroTrainer::UnitShard {
  std::int64_t offset = 0;           // the unit's first element in the flat layout
  Shard shard;                       // this rank's part of the unit's padded buffer
  Tensor params;                     // stage 3: [S] the parameter shard (Parameter)
  Tensor grads;                      // [S] the averaged gradient shard, parameter dtype (Gradient)
  Tensor accum;                      // [S] f32, with fp32 gradient accumulation (Gradient)
  std::unique_ptr<AdamW> optimizer;  // over [offset + shard.begin, offset + shard.owned_end())
};

struct ZeroTrainer::PendingReduction {
  int unit = 0;
  WorkHandle work;
  double issued_us = 0;       // trace: when it was launched
  Tensor landing;             // where the reduced shard arrives
  bool add_to_grads = false;  // landing is a communication buffer to add into the shard
};

ZeroTrainer::ZeroTrainer(Communicator& dp, const TrainingConfig& cfg, ZeroOptions options)
    : dp_(dp), options_(options), ranks_(dp.size()), rank_(dp.rank()), dtype_(cfg.dtype) {
  if (options_.stage < 0 || options_.stage > 3)
    throw UsageError("--zero stages are 0 (plain data parallelism), 1, 2 or 3; got " + std::to_string(options_.stage));
  if (options_.fp32_grad_accum && cfg.dtype == DType::f32)
    throw UsageError("--fp32-grad-accum needs --precision bf16 (fp32 gradients already accumulate in fp32)");
  if (options_.stage <= 1) {
    setup_flat(cfg);
  } else {
    setup_units(cfg);
  }
  plan_ = unit_schedule(store_->num_units(), cfg.model.tied_embeddings, options_.stage == 3 && options_.prefetch);
  model_ = std::make_unique<Model>(*store_, cfg.model_options());
  ModelHooks hooks;
  hooks.before_forward = [this](int u) { before_unit(false, u); };
  hooks.after_forward = [this](int u) { after_unit(false, u); };
  hooks.before_backward = [this](int u) { before_unit(true, u); };
  hooks.after_backward = [this](int u) { after_unit(true, u); };
  model_->set_hooks(std::move(hooks));
}

ZeroTrainer::~ZeroTrainer() {
  // Collectives still in flight hold views of our buffers: let them land first.
  for (auto& w : gathers_)
    if (w) w->wait();
  for (auto& r : reductions_) r.work->wait();
}

// Stages 0 and 1: full parameters and gradients in flat buffers (padded to a multiple of N_d for
// stage 1, so that the buffers split into N_d equal shards).
void ZeroTrainer::setup_flat(const TrainingConfig& cfg) {
  const int pad = options_.stage == 1 ? ranks_ : 1;
  store_ = std::make_unique<ParamStore>(cfg.model, cfg.dtype, cfg.device,
                                        StoreLayout{Residency::flat, Residency::flat, pad});
  store_->init(cfg.seed);
  if (options_.fp32_grad_accum)
    flat_accum_ = Tensor::zeros({store_->padded_numel()}, DType::f32, MemCategory::Gradient, cfg.device);
  if (options_.stage == 0) {
    flat_optimizer_ = std::make_unique<AdamW>(*store_, cfg.adamw);
    return;
  }
  const Shard s = shard_of(store_->numel(), ranks_, rank_);
  flat_optimizer_ = std::make_unique<AdamW>(*store_, cfg.adamw, s.begin, s.owned_end());
  reduced_ = Tensor::zeros({s.size}, options_.fp32_grad_accum ? DType::f32 : cfg.dtype, MemCategory::CommBuffer,
                           cfg.device);
}

// Stages 2 and 3: parameters and gradients per unit, each unit padded to a multiple of N_d.
// Stage 2 keeps every unit's parameters materialized (full parameters, laid out per unit so that
// each unit is all-gathered as one collective); stage 3 keeps only its shard of each unit.
void ZeroTrainer::setup_units(const TrainingConfig& cfg) {
  store_ = std::make_unique<ParamStore>(cfg.model, cfg.dtype, cfg.device,
                                        StoreLayout{Residency::per_unit, Residency::per_unit, ranks_});
  const int units = store_->num_units();
  if (options_.stage == 2) {
    for (int u = 0; u < units; ++u) store_->materialize_params(u);
    store_->init(cfg.seed);
  }
  units_.resize(static_cast<std::size_t>(units));
  gathers_.resize(static_cast<std::size_t>(units));
  gather_issued_us_.resize(static_cast<std::size_t>(units));
  for (int u = 0; u < units; ++u) {
    UnitShard& us = units_[static_cast<std::size_t>(u)];
    const auto [begin, end] = store_->unit_range(u);
    us.offset = begin;
    us.shard = shard_of(end - begin, ranks_, rank_);
    const Shard& s = us.shard;
    Tensor values;  // this rank's real parameter elements of the unit
    if (options_.stage == 3) {
      us.params = Tensor::empty({s.size}, cfg.dtype, MemCategory::Parameter, cfg.device);
      store_->init_range(cfg.seed, begin + s.begin, begin + s.owned_end(), us.params);
      values = us.params.slice(0, s.owned);
    } else {
      values = store_->unit_params(u).slice(s.begin, s.owned_end());
    }
    us.grads = Tensor::zeros({s.size}, cfg.dtype, MemCategory::Gradient, cfg.device);
    if (options_.fp32_grad_accum) us.accum = Tensor::zeros({s.size}, DType::f32, MemCategory::Gradient, cfg.device);
    // A per-unit store has no flat buffer: the optimizer reads its shard's values (the fp32
    // master copy of bf16 parameters starts from them).
    us.optimizer = std::make_unique<AdamW>(store_->infos(), cfg.adamw, begin + s.begin, begin + s.owned_end(), values);
  }
}

// ---- the hooks: the plan's step for (backward, unit) -------------------------------------------

// Trace: a collective's window, from when the trainer launched it to when it waited for it: the
// time the program lets it run beside compute (the "comm" stream shows when it really ran).
void ZeroTrainer::trace_window(const std::string& name, double issued_us) {
  Tracer& tracer = Tracer::instance();
  if (tracer.enabled()) tracer.add(name, "comm window", issued_us, tracer.now_us());
}

void ZeroTrainer::before_unit(bool backward, int unit) {
  const UnitStep& s = plan_[cursor_];
  USP_CHECK(s.backward == backward && s.unit == unit,
            "ZeRO plan out of step with the model: the plan expected " + s.name() + ", the model ran " +
                (backward ? "backward" : "forward") + " unit " + std::to_string(unit));
  if (options_.stage == 3) {
    auto launch_gather = [&](int u) {
      store_->materialize_params(u);
      gather_issued_us_[static_cast<std::size_t>(u)] = Tracer::instance().now_us();
      gathers_[static_cast<std::size_t>(u)] =
          dp_.all_gather_async(units_[static_cast<std::size_t>(u)].params, store_->unit_params(u));
    };
    for (int u : s.gather) launch_gather(u);
    for (int u : s.reads) {  // gathered just now, or prefetched by the previous step
      WorkHandle& w = gathers_[static_cast<std::size_t>(u)];
      USP_CHECK(w != nullptr, "ZeRO-3: unit " + std::to_string(u) + " was neither gathered nor prefetched");
      w->wait();
      w.reset();
      trace_window("all_gather unit " + std::to_string(u), gather_issued_us_[static_cast<std::size_t>(u)]);
    }
    for (int u : s.prefetch) launch_gather(u);  // runs while this unit computes
    max_units_held_ = std::max(max_units_held_, store_->materialized_param_units());
  }
  if (options_.stage >= 2)
    for (int u : s.open_grads) store_->materialize_grads(u);
  span_start_us_ = Tracer::instance().now_us();
}

void ZeroTrainer::after_unit(bool backward, int unit) {
  const UnitStep& s = plan_[cursor_];
  Tracer& tracer = Tracer::instance();
  if (tracer.enabled()) tracer.add(s.name(), "compute", span_start_us_, tracer.now_us());
  if (options_.stage == 3)
    for (int u : s.release) store_->release_params(u);
  if (options_.stage >= 2 && backward) {
    finish_reductions();  // the previous unit's, which ran while this one computed
    for (int u : s.reduce_grads) launch_reduction(u);
  }
  (void)unit;
  cursor_ = (cursor_ + 1) % plan_.size();
}

// A unit's gradient is complete: reduce-scatter it (averaged over the ranks) into this rank's
// shard. The first micro-batch's result lands in the gradient shard itself; later ones land in
// a communication buffer and are added to it when they arrive. With fp32 accumulation every
// micro-batch lands in the bf16 shard and is added to the fp32 one.
void ZeroTrainer::launch_reduction(int unit) {
  UnitShard& us = units_[static_cast<std::size_t>(unit)];
  PendingReduction p;
  p.unit = unit;
  p.add_to_grads = micro_ > 0 && !options_.fp32_grad_accum;
  p.landing =
      p.add_to_grads ? Tensor::empty({us.shard.size}, dtype_, MemCategory::CommBuffer, us.grads.device()) : us.grads;
  p.issued_us = Tracer::instance().now_us();
  p.work = dp_.reduce_scatter_async(store_->unit_grads(unit), p.landing, ReduceOp::avg);
  reductions_.push_back(std::move(p));
}

void ZeroTrainer::finish_reductions() {
  for (PendingReduction& p : reductions_) {
    p.work->wait();
    trace_window("reduce_scatter unit " + std::to_string(p.unit), p.issued_us);
    UnitShard& us = units_[static_cast<std::size_t>(p.unit)];
    if (p.add_to_grads) ops::add_inplace(us.grads, p.landing);
    if (options_.fp32_grad_accum) ops::add_inplace(us.accum, us.grads);
    store_->release_grads(p.unit);  // the unit's full gradient is gone: only the shard remains
  }
  reductions_.clear();
}

// ---- one step ------------------------------------------------------------------------------------

double ZeroTrainer::step(const std::vector<Batch>& micro_batches) {
  USP_CHECK(!micro_batches.empty(), "ZeroTrainer::step: no micro-batches");
  const auto k = static_cast<std::int64_t>(micro_batches.size());
  if (options_.stage <= 1) store_->zero_grad();
  if (flat_accum_.defined()) flat_accum_.zero();
  for (UnitShard& us : units_)
    if (us.accum.defined()) us.accum.zero();
  double loss_sum = 0;
  for (micro_ = 0; micro_ < k; ++micro_) {
    const Batch& b = micro_batches[static_cast<std::size_t>(micro_)];
    cursor_ = 0;
    loss_sum += model_->forward(b.inputs, b.targets);
    model_->backward(1.0f / static_cast<float>(k));
    if (options_.stage >= 2) finish_reductions();
    if (options_.stage <= 1 && flat_accum_.defined()) {  // fp32 accumulation: move this micro-batch's gradient over
      ops::add_inplace(flat_accum_, store_->padded_flat_grad());
      store_->zero_grad();
    }
  }
  optimizer_step();
  return loss_sum / static_cast<double>(k);
}

void ZeroTrainer::optimizer_step() {
  Tensor& local = flat_accum_.defined() ? flat_accum_ : store_->padded_flat_grad();
  switch (options_.stage) {
    case 0:  // data parallelism: everyone averages everything, everyone updates everything
      dp_.all_reduce(local, ReduceOp::avg);
      flat_optimizer_->step_range(store_->flat(), local);
      return;
    case 1:
      zero1_step(dp_, *store_, *flat_optimizer_, local, reduced_);
      return;
    default:
      break;
  }
  std::vector<WorkHandle> gathers;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    UnitShard& us = units_[u];
    const Shard& s = us.shard;
    const Tensor& g = us.accum.defined() ? us.accum : us.grads;
    if (options_.stage == 3) {
      us.optimizer->step_range(us.params.slice(0, s.owned), g.slice(0, s.owned));
      continue;
    }
    // Stage 2: update this rank's part of the unit, then share it with the others (in place).
    Tensor& full = store_->unit_params(static_cast<int>(u));
    us.optimizer->step_range(full.slice(s.begin, s.owned_end()), g.slice(0, s.owned));
    gathers.push_back(dp_.all_gather_async(full.slice(s.begin, s.end()), full));
  }
  for (auto& w : gathers) w->wait();
}

// ---- views for tests and reports ---------------------------------------------------------------

namespace {

// Gathers equal shards [S] of a buffer of n real elements from every rank; appends the n to out.
// The shard travels on comm's device (a copy there when it lives elsewhere: a GPU's shard over the
// CPU world).
void gather_shards(Communicator& comm, const Tensor& shard, std::int64_t n, std::vector<float>& out) {
  const Tensor mine = on_device(shard, comm.device());
  Tensor all = Tensor::empty({shard.numel() * comm.size()}, shard.dtype(), MemCategory::Temporary, comm.device());
  comm.all_gather(mine, all);
  const std::vector<float> values = all.slice(0, n).to_floats();
  out.insert(out.end(), values.begin(), values.end());
}

}  // namespace

std::vector<float> ZeroTrainer::full_parameters(Communicator& comm) {
  if (options_.stage <= 1) return store_->flat().to_floats();
  std::vector<float> out;
  for (int u = 0; u < store_->num_units(); ++u) {
    const auto [begin, end] = store_->unit_range(u);
    if (options_.stage == 2) {
      const std::vector<float> values = store_->unit_params(u).slice(0, end - begin).to_floats();
      out.insert(out.end(), values.begin(), values.end());
    } else {
      gather_shards(comm, units_[static_cast<std::size_t>(u)].params, end - begin, out);
    }
  }
  return out;
}

std::vector<float> ZeroTrainer::averaged_gradient(Communicator& comm) {
  std::vector<float> out;
  if (options_.stage == 0) {
    const Tensor& g = flat_accum_.defined() ? flat_accum_ : store_->padded_flat_grad();
    return g.slice(0, store_->numel()).to_floats();
  }
  if (options_.stage == 1) {
    gather_shards(comm, reduced_, store_->numel(), out);
    return out;
  }
  for (int u = 0; u < store_->num_units(); ++u) {
    const auto [begin, end] = store_->unit_range(u);
    const UnitShard& us = units_[static_cast<std::size_t>(u)];
    gather_shards(comm, us.accum.defined() ? us.accum : us.grads, end - begin, out);
  }
  return out;
}

}  // namespace usp::ch05
