// Chapter 10: one trainer for every layout. On 8 ranks (and 4), layouts that combine DP, TP, PP,
// CP and EP (with ZeRO-1 and several schedules) train like the single-rank baseline: the same
// losses, first gradient and parameters after 3 AdamW steps, element by element through each
// rank's shard. Each rank holds exactly the parameter, gradient and optimizer bytes the
// calculator predicts for its pipeline stage (calc::memory_per_rank with setup.stage). Bad
// layouts are refused with one message on every rank. Without ZeRO the replicas' gradients go
// through chapter 04's buckets (exercises 04.1, 04.2), launched inside the pipeline's backward.
// [mpi]: 4 and 8 ranks. [gpu]: every layout
// on a GPU per rank, over the device communicator, against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chapters/10_5d_parallelism/trainer_5d.hpp"
#include "common/report/row_gather.hpp"
#include "common/calc/memory_model.hpp"
#include "common/device.hpp"
#include "common/memory_tracker.hpp"
#include "common/trace.hpp"
#include "tests/support/baseline_bounds.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch10;
using ch08::ScheduleKind;
using namespace usp::testing;

namespace {

// 4 layers (pp 4 still gives every stage one), GQA, t = 2 divides heads, kv heads, ffn, vocab.
TrainingConfig training(bool moe) {
  ModelConfig model{.name = moe ? "5d-moe" : "5d-test", .vocab = 256, .hidden = 16, .layers = 4, .heads = 4,
                    .kv_heads = 2, .ffn = 24};
  if (moe) {
    model.experts = 4;
    model.experts_per_token = 2;
    model.capacity_factor = 1.0;  // tokens are dropped: the routing must be the baseline's too
    model.router_aux_loss_coef = 0.01;
  }
  return small_training(small_model(model), /*seq=*/8, /*mbs=*/2, /*steps=*/3);
}

struct Case {
  Layout5d layout;
  bool moe = false;
};

std::vector<Case> cases_for(int world) {
  using ch07::CpAttention;
  const std::vector<Case> all = {
      // 8 ranks: three dimensions at once.
      {layout_5d(2, 2, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4)},
      {layout_5d(1, 2, 2, 2, 1, 1, ScheduleKind::one_f_one_b, 2)},
      {layout_5d(2, 2, 1, 2, 1, 0, ScheduleKind::one_f_one_b, 2, 1, CpAttention::all_gather)},
      {layout_5d(2, 1, 2, 2, 1, 1, ScheduleKind::interleaved_1f1b, 2, 2, CpAttention::all_to_all)},
      {layout_5d(4, 1, 2, 1, 1, 1, ScheduleKind::zb_h1, 2)},
      {layout_5d(2, 1, 2, 1, 2, 0, ScheduleKind::one_f_one_b, 2), true},
      {layout_5d(4, 1, 2, 1, 4, 0, ScheduleKind::afab, 2), true},
      // 4 ranks: two at once.
      {layout_5d(1, 2, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4)},
      {layout_5d(2, 1, 1, 2, 1, 1, ScheduleKind::one_f_one_b, 1)},
      {layout_5d(1, 2, 1, 2, 1, 0, ScheduleKind::one_f_one_b, 1)},
      {layout_5d(2, 1, 2, 1, 2, 0, ScheduleKind::zb_h1, 2), true},
  };
  std::vector<Case> out;
  for (const Case& c : all)
    if (c.layout.world() == world) out.push_back(c);
  return out;
}

// The baseline's values of the elements this rank holds, in its units' order: element j of a held
// parameter is element full_index(j) of the unsharded tensor of the same name (TP), and an
// expert's weights keep their global names (EP).
std::vector<float> held_of(const std::vector<float>& full, ch08::StageParams& params, const ModelConfig& model) {
  std::map<std::string, std::int64_t> offset;
  for (const ParamInfo& p : llama_param_layout(model)) offset[p.name] = p.offset;
  std::vector<float> out;
  for (int u : params.units())
    for (const ParamInfo& p : params.store().infos()) {
      if (p.unit != u) continue;
      for (std::int64_t j = 0; j < p.numel; ++j) out.push_back(full[static_cast<std::size_t>(offset.at(p.name) + p.full_index(j))]);
    }
  return out;
}

std::vector<float> held(ch08::StageParams& params, bool grads) {
  std::vector<float> out;
  for (int u : params.units()) {
    const std::vector<float> v = (grads ? params.store().unit_grads(u) : params.store().unit_params(u)).to_floats();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("every 5D layout trains like the single-rank baseline", "[ch10][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  for (const Case& c : cases_for(w.size())) {
    const TrainingConfig cfg = training(c.moe);
    const Layout5d& l = c.layout;
    INFO(l.label() << " " << ch08::schedule_kind_name(l.schedule) << " m " << l.m << ", rank " << w.rank());
    const auto data = make_dataset("synthetic", cfg.seed);
    const testing::Run base = testing::baseline(cfg, *data, l.dp * l.m);
    Trainer5d trainer(w, cfg, l);
    const int replica = trainer.mesh().coord(MeshDim::dp);
    std::vector<double> losses;
    std::vector<float> grad0;
    for (std::int64_t step = 0; step < cfg.steps; ++step) {
      const Step5d s = trainer.step(rank_micro_batches(*data, step, replica, l.m, cfg.mbs, cfg.seq));
      // Every rank holds its (dp, cp) replica's loss over equal token counts: the plain mean.
      losses.push_back(testing::mean_over_ranks(*metrics, s.loss));
      if (step == 0) grad0 = held(trainer.params(), /*grads=*/true);
    }
    // Bounds (as chapters 06-08 justify them): the global gradient is a sum of partial sums in
    // another order than the baseline's one pass (DP/CP averages, TP's row blocks, the CP
    // attention's merged blocks, the experts' sum over ranks): fp32 reassociation, a few ulps of
    // the largest terms, bounded by 2e-6 of the largest element; losses averaged in double, 16 ulps
    // of fp32. A replica, a CP chunk or a TP shard left out is an O(1) error. ZeRO-1: the step's
    // first gradient is the local one (reduce-scatter happens in the optimizer), so it is checked
    // on the parameters only.
    check_losses_near_baseline(losses, base.losses);
    if (l.zero == 0) check_grad_near_baseline(grad0, held_of(base.grad0, trainer.params(), cfg.model), w.rank());
    // Parameters: that rounding through Adam's normalised update (≤ lr per element and step);
    // lr/30 fails on any missed or wrong update.
    check_params_near_baseline(held(trainer.params(), false), held_of(base.params, trainer.params(), cfg.model),
                               cfg.adamw.lr, w.rank());
  }
}

TEST_CASE("the 5D layouts on a device (GPUs, else the emulated cpu:1) train like the CPU baseline",
          "[ch10][mpi][gpu]") {
  const auto gpus = testing::device_ranks();
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  Communicator& tensors = *gpus.tensors;
  for (const Case& c : cases_for(w.size())) {
    const TrainingConfig cfg = training(c.moe);
    const TrainingConfig gpu_cfg = gpus.on_gpu(cfg);
    const Layout5d& l = c.layout;
    INFO(l.label() << " " << ch08::schedule_kind_name(l.schedule) << " m " << l.m << " on " << gpus.where()
                   << ", rank " << w.rank());
    const auto data = make_dataset("synthetic", cfg.seed);
    const testing::Run base = testing::baseline(cfg, *data, l.dp * l.m);  // on the CPU
    Trainer5d trainer(tensors, gpu_cfg, l);
    const int replica = trainer.mesh().coord(MeshDim::dp);
    std::vector<double> losses;
    for (std::int64_t step = 0; step < cfg.steps; ++step)
      losses.push_back(testing::mean_over_ranks(
          *metrics, trainer.step(rank_micro_batches(*data, step, replica, l.m, cfg.mbs, cfg.seq)).loss));
    testing::check_losses_follow(losses, base.losses);
    // The weights within lr/30 as above.
    CHECK(elementwise_mismatch(held(trainer.params(), false), held_of(base.params, trainer.params(), cfg.model),
                               Tolerance::absolute(cfg.adamw.lr / 30), w.rank()) == "");
  }
}

TEST_CASE("without ZeRO the replicas average through chapter 04's buckets, launched during backward",
          "[ch10][mpi]") {
  // dp·pp2: each rank's stage holds 3 of the 6 units. 1F1B runs whole backward passes (BW): every
  // bucket is launched by the gradient-ready hook inside the chunk's last BW. ZB-H1 computes the
  // linear weights' gradients in W, which reports them (ModelHooks::grad_ready): a bucket holding
  // one launches inside a W op, one of norms or the embedding inside a B; none waits for the
  // step's end.
  Communicator& w = world();
  if (w.size() < 4) return;
  const TrainingConfig cfg = training(false);
  const auto data = make_dataset("synthetic", cfg.seed);
  Tracer& tracer = Tracer::instance();
  for (const ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::zb_h1}) {
    const Layout5d l = layout_5d(w.size() / 2, 1, 2, 1, 1, 0, kind, 2);
    INFO(l.label() << " " << ch08::schedule_kind_name(kind) << ", rank " << w.rank());
    Trainer5d trainer(w, cfg, l);
    const StageGradSync* sync = trainer.optimizer().gradient_sync();
    REQUIRE(sync != nullptr);
    CHECK(sync->collectives_per_step() >= 3);  // at least one bucket per held unit
    const std::uint64_t before = trainer.mesh().dp_cp().stats().count(CommOp::all_reduce);
    tracer.clear();
    tracer.enable(true);
    (void)trainer.step(rank_micro_batches(*data, 0, trainer.mesh().coord(MeshDim::dp), l.m, cfg.mbs, cfg.seq));
    tracer.enable(false);
    const std::vector<Span> spans = tracer.spans();
    tracer.clear();
    // Exactly one all-reduce per bucket over the replicas: nothing else averages the gradients.
    CHECK(static_cast<std::int64_t>(trainer.mesh().dp_cp().stats().count(CommOp::all_reduce) - before) ==
          sync->collectives_per_step());
    const auto backward = busy_intervals(spans, "B");  // B(j) and BW(j) ops
    const auto weights = busy_intervals(spans, "W");   // W(j) ops (zero-bubble)
    double last_op_end = 0;
    for (const Span& s : spans)
      if (s.stream == "compute") last_op_end = std::max(last_op_end, s.end_us);
    int launches = 0, inside = 0, in_w = 0, after = 0;
    for (const Span& s : spans) {
      if (s.stream != "launch") continue;
      ++launches;
      if (covered_us(backward, s.start_us - 1e-3, s.start_us + 1e-3) > 0) ++inside;
      if (covered_us(weights, s.start_us - 1e-3, s.start_us + 1e-3) > 0) ++in_w;
      if (s.start_us >= last_op_end) ++after;
    }
    CHECK(launches == sync->collectives_per_step());
    CHECK(after == 0);
    if (kind == ScheduleKind::one_f_one_b) {
      CHECK(inside == launches);
    } else {
      CHECK(in_w > 0);
      CHECK(inside + in_w == launches);
    }
  }
}

TEST_CASE("each rank holds the calculator's parameter, gradient and optimizer bytes for its stage", "[ch10][mpi]") {
  Communicator& w = world();
  for (const Case& c : cases_for(w.size())) {
    const TrainingConfig cfg = training(c.moe);
    const Layout5d& l = c.layout;
    if (ch08::chunks_of(l.schedule, l.v) > 1) continue;  // the calculator's stage is one chunk
    INFO(l.label() << ", rank " << w.rank());
    MemoryTracker& tracker = MemoryTracker::instance();
    const MemCounts before = tracker.current();
    const auto data = make_dataset("synthetic", cfg.seed);
    Trainer5d trainer(w, cfg, l);
    (void)trainer.step(rank_micro_batches(*data, 0, trainer.mesh().coord(MeshDim::dp), l.m, cfg.mbs, cfg.seq));
    const MemCounts after = tracker.current();
    auto held_bytes = [&](MemCategory k) { return after[k] - before[k]; };
    calc::TrainingSetup s;
    s.model = cfg.model;
    s.seq = cfg.seq;
    s.mbs = cfg.mbs;
    s.precision = calc::Precision::fp32;
    s.dp = l.dp, s.zero = l.zero, s.tp = l.tp, s.cp = l.cp, s.pp = l.pp, s.ep = l.ep;
    s.stage = trainer.stage();
    const calc::MemoryBreakdown want = calc::memory_per_rank(s);
    CHECK(held_bytes(MemCategory::Parameter) == want.parameters);
    CHECK(held_bytes(MemCategory::Gradient) == want.gradients);
    // ZeRO-1: the calculator's shard is ceil(N / dp·cp), the largest of the replicas' shards.
    const std::int64_t mine = held_bytes(MemCategory::OptimizerState);
    CHECK(mine == 8 * trainer.optimizer().state_elements());
    std::int64_t largest = mine;
    for (std::int64_t v : report::gather_rows(trainer.mesh().dp_cp(), mine)) largest = std::max(largest, v);
    CHECK(largest == want.optimizer);
  }
}

TEST_CASE("layouts that cannot run are refused with the reason", "[ch10]") {
  const TrainingConfig dense = training(false), moe = training(true);
  auto refused = [](const Layout5d& l, int world, const TrainingConfig& cfg, const std::string& words) {
    try {
      check_layout_5d(l, world, cfg.model, cfg.seq);
    } catch (const UsageError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
      return;
    }
    FAIL("accepted " << l.label());
  };
  refused(layout_5d(2, 2, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4), 6, dense, "does not match the 6 ranks");
  refused(layout_5d(1, 3, 1, 1, 1, 0, ScheduleKind::one_f_one_b, 1), 3, dense, "");  // t = 3 does not divide the heads
  refused(layout_5d(1, 1, 1, 3, 1, 0, ScheduleKind::one_f_one_b, 1), 3, dense, "not divisible by 2·cp");
  refused(layout_5d(1, 1, 8, 1, 1, 0, ScheduleKind::one_f_one_b, 8), 8, dense, "");  // 4 layers, 8 stages
  refused(layout_5d(1, 2, 2, 1, 1, 0, ScheduleKind::zb_h1, 4), 4, dense, "use afab, 1f1b or interleaved");
  refused(layout_5d(2, 1, 1, 1, 1, 2, ScheduleKind::one_f_one_b, 1), 2, dense, "--zero 2");
  refused(layout_5d(2, 1, 1, 1, 2, 0, ScheduleKind::one_f_one_b, 1), 2, dense, "needs a model with experts");
  refused(layout_5d(1, 1, 1, 2, 2, 0, ScheduleKind::one_f_one_b, 1), 2, moe, "a mixture of experts with --cp 2");
  refused(layout_5d(2, 1, 1, 1, 3, 0, ScheduleKind::one_f_one_b, 1), 2, moe, "");
  refused(layout_5d(2, 1, 1, 1, 2, 1, ScheduleKind::one_f_one_b, 1), 2, moe, "--zero 1 with --ep 2");
}
