// Chapter 08: the executor runs the schedules on MPI ranks over the model's stages. Every
// schedule, at p = the world size and m ∈ {1, 4, 8} (interleaved with v = 2 where p divides m,
// DualPipeV on its V where m >= 2p),
// and dp 2 × pp 2 on 4 ranks, trains like the single-rank baseline: the same losses, first
// gradient and parameters after 3 AdamW steps. The activations in flight the executor counts
// equal the simulator's (the same lists), ≤ p for 1F1B and m for AFAB, and the tracker's peak
// follows them; the bytes each rank sends equal the schedule's messages. Under the B / W split
// the model's grad_ready still reports each gradient when it is final (a linear weight's from W).
// [mpi]: 2 and 4 ranks.
// [gpu]: every schedule with the stages on a GPU per rank, over the device communicator (NCCL, or
// host staging when ranks share a GPU), against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/pp_trainer.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "chapters/08_pipeline_parallel/weight_grad_queue.hpp"
#include "common/data/dataset.hpp"
#include "common/device.hpp"
#include "tests/support/baseline_bounds.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch08;
using namespace usp::testing;

namespace {

// 8 layers: p = 4 ranks × v = 2 chunks still give every virtual stage one.
TrainingConfig pp_training() {
  return small_training(
      small_model({.name = "pp-test", .vocab = 256, .hidden = 16, .layers = 8, .heads = 4, .kv_heads = 2, .ffn = 24}),
      /*seq=*/8, /*mbs=*/2, /*steps=*/3);
}

// Every schedule at pp = W for m ∈ {1, 4, 8} (interleaved: v = 2 and m a multiple of W;
// DualPipeV: its V of 2 chunks and m >= 2W), and on 4 ranks dp 2 × pp 2 with m = 4.
std::vector<PpLayout> layouts_for(int W) {
  std::vector<PpLayout> out;
  for (ScheduleKind kind : all_schedule_kinds())
    for (int m : {1, 4, 8}) {
      if (kind == ScheduleKind::interleaved_1f1b && m % W != 0) continue;
      if (kind == ScheduleKind::dualpipev && m < 2 * W) continue;
      out.push_back({1, W, kind, m, chunks_of(kind, 2)});
      if (W == 4 && m == 4) out.push_back({2, 2, kind, m, chunks_of(kind, 2)});
    }
  return out;
}

// This rank's units of a flat vector laid out like the whole model's parameters.
std::vector<float> held_slice(const std::vector<float>& flat, StageParams& params) {
  std::vector<float> out;
  for (int u : params.units()) {
    const auto [begin, end] = params.store().unit_range(u);
    out.insert(out.end(), flat.begin() + begin, flat.begin() + end);
  }
  return out;
}

std::vector<float> held(StageParams& params, bool grads) {
  std::vector<float> out;
  for (int u : params.units()) {
    const std::vector<float> v =
        (grads ? params.store().unit_grads(u) : params.store().unit_params(u)).to_floats();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("under the B / W split grad_ready reports each gradient when it is final", "[ch08]") {
  // One micro-batch through the whole model: B with the weight products queued, then W. Every
  // report's gradient, read at the report, must be the one the optimizer gets after W (a linear
  // weight reported during B would still be zero), and each parameter is reported once.
  const TrainingConfig cfg = pp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const Batch b = data->batch(0, 0, cfg.mbs, cfg.seq);
  ParamStore store(cfg.model);
  store.init(cfg.seed);
  WeightGradQueue queue;
  ModelOptions options;
  options.linears = &queue;
  Model model(store, options);
  std::vector<std::vector<float>> at_report(store.infos().size());
  std::vector<int> reports(store.infos().size(), 0);
  int during_w = 0;
  bool in_w = false;
  ModelHooks hooks;
  hooks.grad_ready = [&](int i) {
    ++reports[static_cast<std::size_t>(i)];
    at_report[static_cast<std::size_t>(i)] = store.grad(i).to_floats();
    during_w += in_w ? 1 : 0;
  };
  model.set_hooks(hooks);
  store.zero_grad();
  (void)model.forward(b.inputs, b.targets);
  queue.begin({0, 0});
  model.backward(1.0f);
  queue.end();
  in_w = true;
  queue.run({0, 0});
  // Per layer: q, k, v, o, gate, up, down; and the head's lm_head.
  CHECK(during_w == 7 * static_cast<int>(cfg.model.layers) + 1);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    INFO("parameter " << store.infos()[i].name);
    CHECK(reports[i] == 1);
    CHECK(at_report[i] == store.grad(static_cast<int>(i)).to_floats());
  }
}

TEST_CASE("every schedule trains like the single-rank baseline", "[ch08][mpi]") {
  Communicator& w = world();
  const TrainingConfig cfg = pp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  for (const PpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << ", rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp * layout.m);
    PpTrainer trainer(w, cfg, layout);
    std::vector<double> losses;
    std::vector<float> grad0;
    for (std::int64_t step = 0; step < cfg.steps; ++step) {
      const PpStep s = trainer.step(rank_micro_batches(*data, step, trainer.dp().rank(), layout.m, cfg.mbs, cfg.seq));
      losses.push_back(testing::mean_over_ranks(trainer.dp(), s.loss));
      if (step == 0) grad0 = held(trainer.params(), /*grads=*/true);
    }
    const std::vector<float> params = held(trainer.params(), /*grads=*/false);
    if (layout.dp == 1) {
      // One replica: every stage runs the baseline's ops on the same values (the stage boundary
      // only hands a tensor over), and each gradient accumulates its m micro-batches' terms in
      // the same order (every schedule runs a stage's backwards in micro-batch order, and B + W
      // are BW's two products). AdamW is elementwise. So: equal bit for bit.
      for (std::size_t s = 0; s < losses.size(); ++s) CHECK(losses[s] == base.losses[s]);
      CHECK(elementwise_mismatch(grad0, held_slice(base.grad0, trainer.params()), Tolerance::exact(), w.rank()) == "");
      CHECK(elementwise_mismatch(params, held_slice(base.params, trainer.params()), Tolerance::exact(), w.rank()) == "");
    } else {
      // dp 2: two replicas' gradients averaged (a sum of two partial sums, halved) where the
      // baseline sums 2m terms in one order: fp32 reassociation, a few ulps (6e-8 relative) of
      // the largest terms; bounded by 2e-6 of the largest element. A replica left out of the
      // average, or a micro-batch counted twice, is an O(1) relative error.
      check_grad_near_baseline(grad0, held_slice(base.grad0, trainer.params()), w.rank());
      // Losses: the replicas' means averaged in double, same values; 16 ulps of fp32.
      check_losses_near_baseline(losses, base.losses);
      // Parameters: the rounding above through Adam's normalised update (≤ lr per element and
      // step, and an arbitrary sign for a gradient within rounding of zero): lr/30 is a thirtieth
      // of one update, so a missed or wrong update fails.
      check_params_near_baseline(params, held_slice(base.params, trainer.params()), cfg.adamw.lr, w.rank());
    }
  }
}

TEST_CASE("activations in flight: the executor's count is the simulator's; 1F1B holds <= p, AFAB m", "[ch08][mpi]") {
  Communicator& w = world();
  const int p = w.size();
  const TrainingConfig cfg = pp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const int m = 8;
  for (ScheduleKind kind : all_schedule_kinds()) {
    const PpLayout layout{1, p, kind, m, chunks_of(kind, 2)};
    INFO(layout.label() << ", rank " << w.rank());
    PpTrainer trainer(w, cfg, layout);
    const PpStep s = trainer.step(rank_micro_batches(*data, 0, 0, m, cfg.mbs, cfg.seq));
    const Simulation sim = simulate(trainer.schedule(), uniform_costs(trainer.schedule().layout.num_stages(), {1, 1, 1}));
    CHECK(s.executed.peak_in_flight == sim.peak_in_flight[static_cast<std::size_t>(w.rank())]);
    if (kind == ScheduleKind::afab) CHECK(s.executed.peak_in_flight == m);
    if (kind == ScheduleKind::one_f_one_b) CHECK(s.executed.peak_in_flight == std::min(m, p - w.rank()));
    // The tracker: the activations one micro-batch leaves in a stage (what its layers declare,
    // Model::saved_bytes) times the count in flight, plus at most the step's m outputs still
    // waiting in the send queue ([B·T, C] each; a send's buffer lives until MPI is done with it,
    // which depends on timing). Whole-backward schedules with one chunk per rank only: after a
    // B, a zero-bubble stage holds W's inputs instead (x and dy of each linear layer), another
    // amount, and an interleaved rank's chunks hold different amounts.
    if (layout.v == 1 && kind != ScheduleKind::zb_h1 && kind != ScheduleKind::zb_h2) {
      const Model& mod = trainer.chunk(0);
      std::int64_t declared = 0;
      for (int u = mod.first_unit(); u <= mod.last_unit(); ++u) declared += mod.saved_bytes()[static_cast<std::size_t>(u)];
      const std::int64_t stream = cfg.mbs * cfg.seq * cfg.model.hidden * 4;
      INFO("declared per micro-batch " << declared << ", peak " << s.executed.peak_activation_bytes);
      CHECK(s.executed.peak_activation_bytes >= s.executed.peak_in_flight * declared);
      CHECK(s.executed.peak_activation_bytes <= s.executed.peak_in_flight * declared + m * stream);
    }
  }
}

TEST_CASE("the bytes each pipeline rank sends are the schedule's messages", "[ch08][mpi]") {
  Communicator& w = world();
  const int p = w.size();
  const TrainingConfig cfg = pp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  for (ScheduleKind kind : all_schedule_kinds()) {
    const int m = kind == ScheduleKind::dualpipev ? std::max(4, 2 * p) : 4;
    const PpLayout layout{1, p, kind, m, chunks_of(kind, 2)};
    INFO(layout.label() << ", rank " << w.rank());
    PpTrainer trainer(w, cfg, layout);
    trainer.pp().reset_stats();
    trainer.step(rank_micro_batches(*data, 0, 0, m, cfg.mbs, cfg.seq));
    // Each send_act carries one micro-batch's stream [B·T, C] in the activation dtype (f32
    // here), each send_grad its gradient, f32: counted from this rank's list.
    std::uint64_t sends = 0;
    for (const Op& op : trainer.schedule().ops[static_cast<std::size_t>(trainer.pp().rank())])
      sends += op.kind == OpKind::send_act || op.kind == OpKind::send_grad;
    const std::uint64_t stream = static_cast<std::uint64_t>(cfg.mbs * cfg.seq * cfg.model.hidden) * 4;
    CHECK(trainer.pp().stats().count(CommOp::send) == sends);
    CHECK(trainer.pp().stats().sent(CommOp::send) == sends * stream);
    // The playbook's count for one chunk per rank: every boundary between two ranks carries m
    // activations forward and m gradients back; inner ranks send both ways, the ends one way.
    if (layout.v == 1) {
      const int r = trainer.pp().rank();
      const std::uint64_t ways = (r > 0 ? 1u : 0u) + (r < p - 1 ? 1u : 0u);
      CHECK(sends == ways * static_cast<std::uint64_t>(m));
    }
    // Nothing else goes over the pipeline group (the loss has its own communicator).
    CHECK(trainer.pp().stats().total_sent() == sends * stream);
  }
}

TEST_CASE("every schedule on a device (GPUs, else the emulated cpu:1) trains like the CPU baseline",
          "[ch08][mpi][gpu]") {
  const auto gpus = testing::device_ranks();
  Communicator& w = world();
  const TrainingConfig cfg = pp_training();
  const TrainingConfig gpu_cfg = gpus.on_gpu(cfg);
  const auto data = make_dataset("synthetic", cfg.seed);
  for (const PpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << " on " << gpus.where() << ", rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp * layout.m);  // on the CPU
    PpTrainer trainer(*gpus.tensors, gpu_cfg, layout);
    std::vector<double> losses;
    for (std::int64_t step = 0; step < cfg.steps; ++step)
      losses.push_back(testing::mean_over_ranks(
          w, trainer.step(rank_micro_batches(*data, step, trainer.dp().rank(), layout.m, cfg.mbs, cfg.seq)).loss));
    testing::check_losses_follow(losses, base.losses);
    // The weights as above (lr/30: a thirtieth of one update, so a missed or wrong update, or a
    // stage's message lost, fails).
    CHECK(elementwise_mismatch(held(trainer.params(), false), held_slice(base.params, trainer.params()),
                               Tolerance::absolute(cfg.adamw.lr / 30), w.rank()) == "");
  }
}
