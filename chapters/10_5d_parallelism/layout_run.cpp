#include "chapters/10_5d_parallelism/layout_run.hpp"

#include <algorithm>
#include <cmath>

#include "chapters/10_5d_parallelism/trainer_5d.hpp"
#include "common/calc/memory_model.hpp"
#include "common/memory_tracker.hpp"
#include "common/report/row_gather.hpp"
#include "common/train/held_out_traffic.hpp"
#include "common/train/loss_agreement.hpp"

namespace usp::ch10 {

namespace {

// The same steps on one device: one rank, the whole global batch as dp·m micro-batches, through a
// quiet runner of its own.
std::vector<double> single_device_losses(Communicator& self, const TrainingConfig& cfg, const Dataset& data, int micro_batches) {
  Layout5d one;
  one.m = micro_batches;
  Trainer5d trainer(self, cfg, one);
  VariantRunner runner(self, {.config = cfg, .tokens_per_step = micro_batches * cfg.tokens_per_micro_batch(),
                              .progress = {.quiet = true}});
  return runner
      .run({.name = "one device", .step = [&](std::int64_t step) {
              return trainer.step(rank_micro_batches(data, step, 0, micro_batches, cfg.mbs, cfg.seq)).loss;
            }})
      .losses;
}

calc::MemoryBreakdown predicted(const TrainingConfig& cfg, const Layout5d& l, int stage) {
  calc::TrainingSetup s = calc_setup(cfg);
  s.dp = l.dp, s.zero = l.zero, s.tp = l.tp, s.cp = l.cp, s.pp = l.pp, s.ep = l.ep, s.stage = stage;
  return calc::memory_per_rank(s);
}

}  // namespace

bool LayoutRun::memory_as_predicted() const {
  for (const RankFacts& r : ranks) {
    if (r.calc_params < 0 || r.params != r.calc_params || r.grads != r.calc_grads) return false;
    if (layout.zero == 0 && r.optimizer != r.calc_optimizer) return false;
    // ZeRO-1: the largest shard among the ranks of the same (tp, pp) coordinate.
    std::int64_t largest = 0;
    for (const RankFacts& o : ranks)
      if (o.tp == r.tp && o.pp == r.pp) largest = std::max(largest, o.optimizer);
    if (largest != r.calc_optimizer) return false;
  }
  return !ranks.empty();
}

double LayoutRun::max_relative_loss_gap() const {
  return max_loss_gap(losses, reference, true);
}

LayoutRun run_layout(VariantRunner& runner, Communicator& world, Communicator& metrics, const TrainingConfig& cfg,
                     const Dataset& data, const Layout5d& layout, std::int64_t eval_batches) {
  LayoutRun run;
  run.layout = layout;
  run.moe = cfg.model.is_moe();
  MemoryTracker& tracker = MemoryTracker::instance();
  const MemCounts before = tracker.current();
  tracker.reset_peak();
  MemCounts peak;
  RankFacts me;
  {
    Trainer5d trainer(world, cfg, layout);
    Mesh& mesh = trainer.mesh();
    me.dp = mesh.coord(MeshDim::dp), me.tp = mesh.coord(MeshDim::tp), me.cp = mesh.coord(MeshDim::cp);
    me.pp = mesh.coord(MeshDim::pp);
    // Every rank holds its (dp, cp) replica's loss over equal token counts: the plain mean.
    TrainingVariant steps{.name = layout.label()};
    steps.step = [&](std::int64_t step) {
      const Step5d s = trainer.step(rank_micro_batches(data, step, me.dp, layout.m, cfg.mbs, cfg.seq));
      const MemCounts now = tracker.peak();  // the executor restarts the peaks each step: keep the largest
      for (int c = 0; c < kNumMemCategories; ++c) peak.bytes[c] = std::max(peak.bytes[c], now.bytes[c]);
      return s.loss;
    };
    // The held-out loss: the replicas of this (tp, cp, pp) coordinate split the batches, the cp
    // ranks' token losses are averaged (groups of metrics, which the chapter does not report);
    // what the evaluations send inside the layers and between the stages is set aside.
    const int tp = layout.tp, cp = layout.cp;
    const std::unique_ptr<Communicator> replicas =
        eval_batches > 0 ? metrics.split(me.tp + tp * (me.cp + cp * me.pp), me.dp) : nullptr;
    const std::unique_ptr<Communicator> cp_peers =
        eval_batches > 0 ? metrics.split(me.tp + tp * (me.dp + layout.dp * me.pp), me.cp) : nullptr;
    HeldOutTraffic held_tp(mesh.tp()), held_cp(mesh.cp()), held_pp(mesh.pp()), held_ep(mesh.ep());
    if (eval_batches > 0)
      steps.validation = [&](std::int64_t) {
        const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
        const double mine = held_tp.count([&] {
          return held_cp.count([&] {
            return held_pp.count([&] {
              return held_ep.count([&] { return trainer.held_out_loss(*replicas, data, eval_batches, cfg.mbs, cfg.seq); });
            });
          });
        });
        double sum = 0;  // in cp-rank order: the same bits on every rank
        for (double v : report::gather_rows(*cp_peers, mine)) sum += v;
        return sum / static_cast<double>(cp);
      };
    const VariantRun done = runner.run(steps);
    run.losses = done.losses;
    run.median_step_seconds = done.median_step_seconds();
    run.val_steps = done.val_steps;
    run.val_losses = done.val_losses;
    const auto steps_done = static_cast<std::uint64_t>(cfg.steps);
    me.sent_tp = static_cast<std::int64_t>(held_tp.training_stats().total_sent() / steps_done);
    me.sent_cp = static_cast<std::int64_t>(held_cp.training_stats().total_sent() / steps_done);
    me.sent_dp_cp = static_cast<std::int64_t>(mesh.dp_cp().stats().total_sent() / steps_done);
    me.sent_pp = static_cast<std::int64_t>(held_pp.training_stats().total_sent() / steps_done);
    me.sent_ep = static_cast<std::int64_t>(held_ep.training_stats().total_sent() / steps_done);
    auto added = [&](MemCategory k) { return peak[k] - before[k]; };
    me.params = added(MemCategory::Parameter);
    me.grads = added(MemCategory::Gradient);
    me.optimizer = added(MemCategory::OptimizerState);
    me.activations = added(MemCategory::Activation);
    if (ch08::chunks_of(layout.schedule, layout.v) == 1) {
      const calc::MemoryBreakdown want = predicted(cfg, layout, me.pp);
      me.calc_params = want.parameters, me.calc_grads = want.gradients, me.calc_optimizer = want.optimizer;
    }
  }
  run.ranks = report::gather_rows(metrics, me);
  auto self = metrics.split(metrics.rank(), 0);
  // The reference on one CPU device (the course's baseline, whatever device the layouts ran on).
  TrainingConfig cpu = cfg;
  cpu.device = Device::cpu();
  if (metrics.rank() == 0) run.reference = single_device_losses(*self, cpu, data, layout.dp * layout.m);
  return run;
}

}  // namespace usp::ch10
