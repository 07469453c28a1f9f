// Chapter 04 on real ranks (run on 1, 2 and 4 ranks: the data-parallel degree is the world's):
// every variant against the single-rank baseline with
// and without gradient accumulation, the exact collective counts and bytes, and the traces.
// [gpu]: every variant with the model on a GPU per rank and the gradients over the device
// communicator (NCCL, or host staging when ranks share a GPU) against the CPU baseline.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "chapters/04_data_parallel/comm_overlap.hpp"
#include "common/device.hpp"
#include "common/model/unit_spans.hpp"
#include "common/trace.hpp"
#include "common/train/validation_loss.hpp"
#include "chapters/04_data_parallel/dp_trainer.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch04;

namespace {

// usp-tiny: parameters from 64 (norms) to 16384 elements.
TrainingConfig tiny() {
  return {.model = ModelConfig::builtin("usp-tiny"), .seq = 16, .mbs = 2, .adamw = {.lr = 1e-3}};
}

// 20000 bytes: between the norms (256 B) and the matrices (8-64 KiB) of usp-tiny, so buckets
// hold one to three parameters of uneven sizes. Walking backward (f32 bytes): lm_head 65536 |
// final norm 256 + down 49152 | up 49152 | gate 49152 | post-norm 256 + o 16384 + v 8192 |
// k 8192 + q 16384 | input norm 256 + (layer 0) down ... | k + q | input norm + embedding
// 65536: 12 buckets.
constexpr std::int64_t kCap = 20000;
constexpr std::int64_t kBuckets = 12;

// The single-rank baseline: the whole global batch in one forward and backward per step.
struct Baseline {
  std::vector<double> losses;
  std::vector<float> params;  // after the last step
};

Baseline run_baseline(const TrainingConfig& cfg, const Dataset& data, std::int64_t global_batch, int steps) {
  ParamStore p(cfg.model);
  p.init(cfg.seed);
  Model m(p);
  AdamW opt(p, cfg.adamw);
  Baseline b;
  for (int s = 0; s < steps; ++s) {
    const Batch batch = data.batch(s, 0, global_batch, cfg.seq);
    p.zero_grad();
    b.losses.push_back(m.forward(batch.inputs, batch.targets));
    m.backward();
    opt.step(p);
  }
  b.params = p.flat().to_floats();
  return b;
}

float max_abs(const std::vector<float>& a) {
  float m = 0;
  for (float v : a) m = std::max(m, std::fabs(v));
  return m;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Whether every rank holds the same parameters as rank 0, bit for bit (collective).
bool replicas_identical(Communicator& comm, ParamStore& p) {
  Tensor mine = p.flat().clone(MemCategory::Temporary);
  Tensor root = p.flat().clone(MemCategory::Temporary);
  comm.broadcast(root, 0);
  const float same = bit_equal(mine.to_floats(), root.to_floats()) ? 1.0f : 0.0f;
  Tensor flag = Tensor::from_floats({same}, {1});
  comm.all_reduce(flag, ReduceOp::min);
  return flag.to_floats()[0] == 1.0f;
}

}  // namespace

TEST_CASE("every DP variant reproduces the single-rank baseline, with and without accumulation", "[ch04][mpi]") {
  Communicator& comm = testing::world();
  const int n = comm.size();
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t psi = cfg.model.num_parameters();
  const int steps = 3;

  // A single-rank probe that computes the global batch's gradient at the DP run's own weights.
  ParamStore probe(cfg.model);
  Model probe_model(probe);

  for (std::int64_t k : {1, 2}) {
    const Baseline base = run_baseline(cfg, *data, n * k * cfg.mbs, steps);
    std::vector<float> naive_params;
    for (DpMode mode : all_dp_modes()) {
      INFO("dp " << n << ", grad-acc " << k << ", " << dp_mode_name(mode));
      DataParallelTrainer trainer(DpConfig{cfg, k, mode, kCap}, comm);
      REQUIRE(trainer.global_batch() == n * k * cfg.mbs);
      if (mode == DpMode::bucketing) REQUIRE(trainer.sync().plan().buckets.size() == kBuckets);
      const std::int64_t expected = mode == DpMode::bucketing ? kBuckets : static_cast<std::int64_t>(trainer.params().infos().size());
      CHECK(trainer.sync().collectives_per_step() == expected);
      for (int s = 0; s < steps; ++s) {
        INFO("step " << s);
        probe.flat().copy_from(trainer.params().flat());
        probe.zero_grad();
        const Batch global = data->batch(s, 0, n * k * cfg.mbs, cfg.seq);
        probe_model.forward(global.inputs, global.targets);
        probe_model.backward();
        const DpStepStats st = trainer.step(*data, s);

        // Communication, counted: nothing during the first k-1 micro-batches; one all-reduce per
        // parameter or bucket per step, all of them from the hook during the last backward
        // (overlap, bucketing) or all after it (naive).
        // (CHECK, not REQUIRE: a rank leaving the case here would miss the collectives below.)
        CHECK(st.collectives_during.size() == static_cast<std::size_t>(k));
        if (st.collectives_during.size() == static_cast<std::size_t>(k)) {
          for (std::int64_t j = 0; j + 1 < k; ++j) CHECK(st.collectives_during[static_cast<std::size_t>(j)] == 0);
          const std::int64_t during_last = st.collectives_during.back();
          CHECK(during_last + st.collectives_after == expected);
          CHECK(during_last == (mode == DpMode::naive ? 0 : expected));
        }
        // Bytes: a ring all-reduce of all Ψ gradients, 2(n-1)/n · 4Ψ, whatever the bucketing or
        // k (exact for n = 1, 2, 4: each op's 2(n-1)/n share of its 4·numel bytes is whole).
        const double ring = 2.0 * (n - 1) / n * 4.0 * static_cast<double>(psi);
        if ((2 * (n - 1) * 4) % n == 0) CHECK(st.bytes_sent == static_cast<std::int64_t>(ring));
        else CHECK(std::fabs(static_cast<double>(st.bytes_sent) - ring) < static_cast<double>(expected));

        // The synchronised gradient against the global batch's gradient at the same weights
        // (the probe's): the same sum of per-token terms, grouped per rank and micro-batch (and
        // reduced by MPI in its own order) instead of in one matmul. fp32 reassociation over
        // ≤ n·k·b·s = 256 terms moves an element by a few ulps of the largest terms: 1e-5 of
        // the largest gradient bounds it (ch03's bound; measured ≤ 7e-7). A missing 1/n or 1/k,
        // or a parameter left unsynchronised, is an O(1) relative error. Bit for bit where
        // nothing is regrouped: one rank, one micro-batch.
        const auto g = trainer.params().flat_grad().to_floats();
        const auto gp = probe.flat_grad().to_floats();
        CHECK(max_abs(gp) > 0);
        const testing::Tolerance regrouped =
            n == 1 && k == 1 ? testing::Tolerance::exact() : testing::Tolerance::absolute(1e-5 * max_abs(gp));
        CHECK(testing::elementwise_mismatch(g, gp, regrouped, comm.rank()) == "");

        // Against the baseline's own trajectory. The loss of the global batch: each rank's mean
        // over its k·b samples, averaged over the ranks, is the mean over all n·k·b samples;
        // at step 0 both are double sums of fp32 per-token losses from the same weights, equal
        // but for the last bits; later steps start from weights that differ as bounded below,
        // which moves the loss by far less than 1e-5 relative (measured ≤ 1e-8), while a
        // missing average or a lost micro-batch moves it by far more.
        const double loss = mean_over_ranks(comm, {st.loss})[0];
        CHECK(std::fabs(loss - base.losses[static_cast<std::size_t>(s)]) <= 1e-5 * base.losses[static_cast<std::size_t>(s)]);
        if (n == 1 && k == 1) CHECK(loss == base.losses[static_cast<std::size_t>(s)]);
      }
      // Parameters after the steps. Adam's update lr·m̂/(√v̂ + eps) is sign-like where the
      // gradient is within rounding of 0, so such elements may differ by up to 2·lr per step
      // (ch03); everywhere else the difference is rounding of w. The bound everywhere:
      // 2·lr·steps (measured ≤ 8e-5 against 6e-3). Bit for bit with one rank and one
      // micro-batch. And the replicas must not drift: every rank holds the same weights.
      const auto p = trainer.params().flat().to_floats();
      const testing::Tolerance drift = n == 1 && k == 1 ? testing::Tolerance::exact()
                                                        : testing::Tolerance::absolute(2.0 * cfg.adamw.lr * steps);
      CHECK(testing::elementwise_mismatch(p, base.params, drift, comm.rank()) == "");
      CHECK(replicas_identical(comm, trainer.params()));
      // Bit for bit where the reduction order is the same: overlap issues naive's all-reduces,
      // same sizes, same order, only earlier; with n <= 2 every element is a + b (commutative,
      // one rounding) whatever the message sizes, so bucketing agrees too.
      if (mode == DpMode::naive) naive_params = p;
      if (mode == DpMode::overlap || (mode == DpMode::bucketing && n <= 2)) CHECK(bit_equal(p, naive_params));
    }
  }
}

TEST_CASE("traces: comm overlaps backward with overlap and bucketing, never with naive", "[ch04][mpi]") {
  Communicator& comm = testing::world();
  TrainingConfig cfg = tiny();
  cfg.seq = 64;  // a backward of a few milliseconds, so the launches land well inside it
  cfg.mbs = 4;
  const auto data = make_dataset("synthetic", cfg.seed);
  Tracer& tracer = Tracer::instance();
  const int steps = 2;
  for (DpMode mode : all_dp_modes()) {
    INFO(dp_mode_name(mode) << " on " << comm.size() << " ranks");
    DataParallelTrainer trainer(DpConfig{cfg, 1, mode, kCap}, comm);
    tracer.clear();
    tracer.align(comm);
    tracer.enable(true);
    for (int s = 0; s < steps; ++s) trainer.step(*data, s);
    tracer.enable(false);
    const auto spans = tracer.spans();
    tracer.clear();

    // The communicator recorded every all-reduce as a comm span, and nothing else.
    int comm_spans = 0, backward_spans = 0;
    for (const Span& s : spans) {
      if (s.stream == "comm") {
        comm_spans += 1;
        CHECK(s.name == "all_reduce");
        CHECK(s.start_us <= s.end_us);
      }
      if (s.stream == "compute" && s.name.rfind("backward ", 0) == 0) backward_spans += 1;
    }
    CHECK(comm_spans == steps * trainer.sync().collectives_per_step());
    CHECK(backward_spans == steps * (static_cast<int>(cfg.model.layers) + 2));

    const CommOverlap o = comm_overlap(spans);
    if (mode == DpMode::naive) {
      // Launched after the last backward span closed, on every rank: no overlap at all.
      CHECK(o.overlapping_spans == 0);
      CHECK(o.hidden_us == 0.0);
    }
    // When each all-reduce was launched: overlap and bucketing launch from the gradient-ready
    // hook, inside a unit's backward (every launch), naive only after backward (none). This is
    // what the trainer decides; whether the communicator then runs the op while backward still
    // computes depends on the machine (a progress thread sharing an oversubscribed core may not
    // get to run until backward is over), so the measured overlap is reported, not asserted.
    const auto backward = busy_intervals(spans, kBackwardPrefix);
    int launches = 0, inside = 0;
    for (const Span& s : spans) {
      if (s.stream != "launch") continue;
      ++launches;
      if (covered_us(backward, s.start_us - 1e-3, s.start_us + 1e-3) > 0) ++inside;
    }
    CHECK(launches == steps * trainer.sync().collectives_per_step());
    CHECK(inside == (mode == DpMode::naive ? 0 : launches));
  }
}

TEST_CASE("DP on a device (GPUs, else the emulated cpu:1): every variant reproduces the CPU baseline",
          "[ch04][mpi][gpu]") {
  const testing::GpuRanks gpus = testing::device_ranks();  // NCCL, or host-staged MPI
  const int n = testing::runtime().size();
  TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  const int steps = 3;
  const Baseline base = run_baseline(cfg, *data, n * cfg.mbs, steps);  // on the CPU
  cfg = gpus.on_gpu(cfg);
  const std::unique_ptr<Communicator>& comm = gpus.tensors;
  for (DpMode mode : all_dp_modes()) {
    INFO("dp " << n << " on " << cfg.device.str() << ", " << dp_mode_name(mode));
    DataParallelTrainer trainer(DpConfig{cfg, 1, mode, kCap}, *comm);
    for (int s = 0; s < steps; ++s) {
      const DpStepStats st = trainer.step(*data, s);
      const double loss = mean_over_ranks(testing::world(), {st.loss})[0];
      // CPU vs CUDA: fp32 in other summation orders (cuBLAS vs OpenBLAS, block reductions), a few
      // ulps per op that AdamW's normalised steps keep from growing over three steps:
      // 1e-5 of the loss, 1e-4 of the weights' magnitude (tests/model/test_model_cuda.cpp).
      INFO("step " << s << ": global loss " << loss << ", baseline " << base.losses[static_cast<std::size_t>(s)]);
      CHECK(std::fabs(loss - base.losses[static_cast<std::size_t>(s)]) <= 1e-5 * base.losses[static_cast<std::size_t>(s)]);
      const double ring = 2.0 * (n - 1) / n * 4.0 * static_cast<double>(cfg.model.num_parameters());
      if ((2 * (n - 1) * 4) % n == 0) CHECK(st.bytes_sent == static_cast<std::int64_t>(ring));
    }
    const std::vector<float> got = trainer.params().flat().to(Device::cpu()).to_floats();
    REQUIRE(got.size() == base.params.size());
    float worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - base.params[i]) <= worst)) worst = std::fabs(got[i] - base.params[i]), at = i;
    INFO("rank " << testing::runtime().rank() << ": largest |Δ| " << worst << " at parameter element " << at << " (expected "
                 << base.params[at] << ", got " << got[at] << ")");
    CHECK(worst <= 1e-4f * max_abs(base.params));
  }
}

TEST_CASE("the held-out loss split over the ranks has the single-rank value's bits", "[ch04][mpi]") {
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  DataParallelTrainer trainer(DpConfig{cfg, 1, DpMode::naive, kCap}, testing::world());
  (void)trainer.step(*data, 0);  // trained weights, the same on every rank
  for (std::int64_t batches : {1, 3, 5}) {  // fewer batches than ranks, and uneven shares
    const double split = validation_loss(testing::world(), trainer.model(), *data, batches, cfg.mbs, cfg.seq);
    const double alone = validation_loss(trainer.model(), *data, batches, cfg.mbs, cfg.seq);
    INFO("rank " << testing::runtime().rank() << " of " << testing::runtime().size() << ", " << batches
                 << " batches: split " << split << ", expected (one rank) " << alone);
    CHECK(std::memcmp(&split, &alone, sizeof split) == 0);
  }
}
