// The planner (chapter 10): its step model against the playbook's data-parallel scaling series
// of the 1.34B model (the calibration set: the fitted constants must reproduce it); exercise 10.1's
// four terms against hand-worked numbers (the memory filter over the pipeline stages, TP's
// all-reduces at the level of the hierarchy they span, DP's collectives per ZeRO stage with their
// latency and overlap, the pipeline's point to point); every layout it proposes fits, the search
// over the playbook's campaign (4 models × 7 node counts) finds a layout for each where one fits;
// cluster files; bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/calc/memory_model.hpp"
#include "common/error.hpp"
#include "chapters/10_5d_parallelism/calibration.hpp"
#include "chapters/10_5d_parallelism/campaign.hpp"
#include "chapters/10_5d_parallelism/planner.hpp"
#include "chapters/10_5d_parallelism/planner_terms.hpp"
#include "chapters/10_5d_parallelism/step_terms.hpp"

using namespace usp;
using namespace usp::plan;

namespace {

// The 8.86B model (L = 32, h = 4096) at s = 4096, mbs 1, on tp × pp × dp with gas micro-batches.
PlanLayout layout_886b(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t gas) {
  PlanLayout l;
  l.setup.model = ModelConfig::builtin("playbook-8.86b");
  l.setup.seq = 4096;
  l.setup.tp = tp;
  l.setup.pp = pp;
  l.setup.dp = dp;
  l.gas = gas;
  return l;
}

PlanLayout dp_layout(std::int64_t dp, std::int64_t mbs, std::int64_t gas) {
  PlanLayout l;
  l.setup.model = ModelConfig::builtin("playbook-1.34b");
  l.setup.seq = 4096;
  l.setup.mbs = mbs;
  l.setup.dp = dp;
  l.gas = gas;
  return l;
}

}  // namespace

TEST_CASE("the step model reproduces the playbook's DP scaling series of the 1.34B model (its calibration set)",
          "[plan]") {
  // DP (GPUs), MBS, GAS, measured MFU (ZeRO-0, TP = PP = 1, s = 4096, 1,048,576 tokens per step).
  struct Point {
    std::int64_t dp, mbs, gas;
    double mfu;
  };
  const Point series[] = {{8, 2, 16, 0.392}, {16, 1, 16, 0.367}, {32, 1, 8, 0.345},
                          {64, 1, 4, 0.304}, {128, 2, 1, 0.258}, {256, 1, 1, 0.153}};
  const Cluster cl = Cluster::playbook();
  for (const Point& p : series) {
    const PlanLayout l = dp_layout(p.dp, p.mbs, p.gas);
    INFO("DP " << p.dp << ": predicted " << mfu(l, cl) << ", measured " << p.mfu);
    CHECK(l.world() * p.mbs * p.gas * 4096 == p.dp * p.mbs * p.gas * 4096);
    // The constants were fitted to these six points (max relative error 3.5%); a model
    // that drifts from what was fitted (a term dropped, a bandwidth taken at the wrong node
    // count) misses by more than 5%. The issue's bar is 15%.
    CHECK(std::fabs(mfu(l, cl) - p.mfu) <= 0.05 * p.mfu);
  }
}

TEST_CASE("exercise 10.1 (a): layout_bytes is the most loaded pipeline stage's memory, logits included", "[plan]") {
  // The 1.34B model untied (v = 128256, h = 2048, L = 16), s = 4096, mixed precision, full
  // recomputation (a layer keeps only its input: 2·s·b·h bytes), ZeRO-0, dp 1.
  PlanLayout l = dp_layout(1, 8, 1);
  l.setup.model.tied_embeddings = false;
  l.setup.recompute = Recompute::full;
  const std::int64_t h = 2048, v = 128256, s = 4096;
  const std::int64_t layer = 4 * h * h * 1 + 3 * h * 8192 + 2 * h;  // q, k, v, o (32 kv heads), MLP, norms
  const std::int64_t table = v * h;                                  // the embedding, or the head
  const std::int64_t per_param = 2 + 2 + 12;                          // bf16 weights and grads, fp32 master + Adam
  const std::int64_t input = 2 * s * 8 * h;                          // one layer's input, mbs 8
  const std::int64_t logits = 2 * 4 * 8 * s * v;                     // fp32 logits and gradient, 8 sequences
  SECTION("pp = 1: the one stage, with its logits") {
    CHECK(layout_bytes(l) == per_param * (table + 16 * layer + h + table) + 16 * input + logits);
  }
  SECTION("cp = 2: a CP rank computes the loss of its s/cp tokens only, so it holds s/cp rows of logits") {
    l.setup.cp = 2;
    l.setup.dp = 1;
    INFO("exercise 10.1 (a): cp 2, mbs 8, s 4096: logits of 8 x 2048 rows x 128256 columns, fp32, twice");
    CHECK(layout_bytes(l) == calc::memory_per_rank(l.setup).total() + 2 * 4 * 8 * (s / 2) * v);
  }
  SECTION("pp = 16, mbs 8: the last stage (head + logits) outweighs the first (16 micro-batches in flight)") {
    l.setup.pp = 16;
    l.gas = 16;
    const std::int64_t first = per_param * (table + layer) + 16 * input;
    const std::int64_t last = per_param * (layer + h + table) + 1 * input + logits;
    REQUIRE(last > first);
    CHECK(layout_bytes(l) == last);
  }
  SECTION("pp = 16, mbs 1: the first stage outweighs the last") {
    l.setup.pp = 16;
    l.setup.mbs = 1;
    l.setup.recompute = Recompute::none;
    l.gas = 128;
    calc::TrainingSetup first = l.setup, last = l.setup;
    last.stage = 15;
    REQUIRE(calc::memory_per_rank(first).total() > calc::memory_per_rank(last).total() + logits / 8);
    CHECK(layout_bytes(l) == calc::memory_per_rank(first).total());
  }
}

TEST_CASE("exercise 10.1 (b): TP's all-reduces per step at the bandwidth of the level they span", "[plan]") {
  const Cluster cl = Cluster::playbook();
  // The 8.86B model (L = 32, h = 4096), s = 4096, mbs 1, tp 4 × pp 2, 16 micro-batches per step:
  // 4 all-reduces × 16 layers per stage × 16 micro-batches = 1024, each of 4096·4096·2 bytes
  // = 32 MiB moving 2·3/4 of that through each link, inside a node: 435.97 GB/s × 0.486 (kBandwidthEfficiency).
  PlanLayout l = layout_886b(4, 2, 1, 16);
  const double one = 4096.0 * 4096.0 * 2.0 * 1.5;
  CHECK(tp_seconds(l, cl) == Approx(1024.0 * one / (435.97e9 * 0.486)).epsilon(1e-12));
  CHECK(step_time(l, cl).tp == tp_seconds(l, cl));
  l.setup.tp = 1;
  CHECK(tp_seconds(l, cl) == 0.0);
  // TP over 16 GPUs of a cluster that allows it spans 2 nodes: 2·15/16 of each, at 361.75 GB/s.
  Cluster open = cl;
  open.tp_within_node = false;
  l.setup.tp = 16;
  l.setup.pp = 1;
  l.gas = 1;
  CHECK(tp_seconds(l, open) == Approx(4.0 * 32 * 4096.0 * 4096.0 * 2.0 * 2.0 * 15 / 16 / (361.75e9 * 0.486)).epsilon(1e-12));
  // Under CP 2 each CP rank holds 2048 of the 4096 tokens, and its TP group all-reduces those
  // rows only: tp 2 × cp 2, one stage, 4 micro-batches: 4 × 32 layers × 4 = 512 all-reduces of
  // 2048·4096·2 bytes, 2·1/2 of each through the link, inside a node.
  l.setup.tp = 2;
  l.setup.cp = 2;
  l.gas = 4;
  INFO("exercise 10.1: tp 2 x cp 2 on the 8.86B model, s 4096: TP reduces each CP rank's s/cp tokens");
  CHECK(tp_seconds(l, cl) == Approx(512.0 * 2048 * 4096.0 * 2.0 * 1.0 / (435.97e9 * 0.486)).epsilon(1e-12));
}

TEST_CASE("the pipeline bubble is chapter 08's simulator's; CP and ZeRO-3 add their collectives", "[plan]") {
  using ch08::ScheduleKind;
  // t_F = t_B = t_W: 1F1B (p-1)/m, ZB-H1 (p-1)/(3m) (chapter 08's formulas, which its simulator meets exactly).
  CHECK(bubble_ratio(ScheduleKind::one_f_one_b, 4, 8) == 3.0 / 8);
  CHECK(bubble_ratio(ScheduleKind::zb_h1, 4, 8) == 3.0 / 24);
  const Cluster cl = Cluster::playbook();
  PlanLayout l = layout_886b(1, 4, 2, 8);
  const StepTime one = step_time(l, cl);
  CHECK(one.pp_bubble == Approx(one.compute * 3.0 / 8).epsilon(1e-12));
  l.kind = ScheduleKind::zb_h1;
  CHECK(step_time(l, cl).pp_bubble == Approx(one.compute * 3.0 / 24).epsilon(1e-12));
  // CP 2 (inside a node): per layer and micro-batch 3 × (cp-1) × K and V of s/cp tokens
  // (32 kv heads × 128 = 4096 values each), 8 layers per stage, 8 micro-batches, at 0.486 × the
  // all-gather bus bandwidth in a node.
  l.setup.cp = 2;
  const double kv = 2.0 * 2048 * 4096 * 2;
  CHECK(step_time(l, cl).cp == Approx(8 * 3 * kv * 8 / (cl.bus(cl.all_gather, 1) * 0.486)).epsilon(1e-12));
  // ZeRO-3 gathers the parameters in every micro-batch's forward and backward: more DP time than
  // ZeRO-1's one all-reduce, growing with the micro-batches.
  l.setup.cp = 1;
  l.setup.zero = 1;
  const double zero1 = step_time(l, cl).dp;
  l.setup.zero = 3;
  const double zero3 = step_time(l, cl).dp;
  CHECK(zero3 > zero1);
  l.gas = 16;
  CHECK(step_time(l, cl).dp > zero3);
}

TEST_CASE("exercise 10.1 (c): DP's collectives per ZeRO stage, their latency, what the backward hides", "[plan]") {
  const Cluster cl = Cluster::playbook();
  // The 1.34B model: N = 128256·2048 + 16·(4·2048² + 3·2048·8192 + 2·2048) + 2048 = 1,336,477,696
  // parameters; the fit here: bandwidth efficiency 0.5, nothing hidden, no latency, unless changed.
  const double N = 1336477696;
  REQUIRE(ModelConfig::builtin("playbook-1.34b").num_parameters() == 1336477696);
  StepFit fit;
  fit.bandwidth_efficiency = 0.5;
  fit.overlap = 0;
  fit.latency = 0;
  SECTION("ZeRO-0 over 256 ranks: one all-reduce of 2N bytes, 2·255/256 of it per link, over 32 nodes") {
    PlanLayout l = dp_layout(256, 1, 1);
    INFO("exercise 10.1 (c): dp 256, ZeRO-0: 2 · 2N · 255/256 bytes at 64.93 GB/s × 0.5");
    CHECK(dp_seconds(l, cl, fit, 1.0) == Approx(2 * 2 * N * 255 / 256 / (64.93e9 * 0.5)).epsilon(1e-12));
    l.setup.dp = 1;
    CHECK(dp_seconds(l, cl, fit, 1.0) == 0.0);
  }
  SECTION("the DP group is dp·cp ranks, tp apart; a rank owns N/(tp·pp) parameters") {
    // tp 2 × cp 2 × dp 4: n = 8 replicas 2 ranks apart span 16 GPUs = 2 nodes (361.75 GB/s).
    PlanLayout l = dp_layout(4, 1, 1);
    l.setup.tp = 2, l.setup.cp = 2, l.setup.pp = 2;
    INFO("exercise 10.1 (c): dp 4 × cp 2 × tp 2 × pp 2: 8 replicas over 2 nodes, N/4 parameters each");
    CHECK(dp_seconds(l, cl, fit, 1.0) == Approx(2 * 2 * (N / 4) * 7 / 8 / (361.75e9 * 0.5)).epsilon(1e-12));
    l.setup.dp = 1;  // CP ranks alone hold the same weights too: 2 of them, inside a node
    CHECK(dp_seconds(l, cl, fit, 1.0) == Approx(2 * 2 * (N / 4) * 1 / 2 / (435.97e9 * 0.5)).epsilon(1e-12));
  }
  SECTION("ZeRO-2 reduce-scatters every micro-batch and gathers once; ZeRO-3 also gathers twice per micro-batch") {
    // dp 8 in a node, 4 micro-batches: each collective moves 2N · 7/8 bytes per link.
    PlanLayout l = dp_layout(8, 1, 4);
    const double share = 2 * N * 7 / 8;
    l.setup.zero = 1;
    CHECK(dp_seconds(l, cl, fit, 1.0) == Approx(2 * share / (435.97e9 * 0.5)).epsilon(1e-12));
    l.setup.zero = 2;
    INFO("exercise 10.1 (c): ZeRO-2, 4 micro-batches: 4 reduce-scatters (249.73 GB/s) and 1 all-gather (249.85 GB/s)");
    CHECK(dp_seconds(l, cl, fit, 1.0) ==
          Approx(4 * share / (249.73e9 * 0.5) + share / (249.85e9 * 0.5)).epsilon(1e-12));
    l.setup.zero = 3;
    CHECK(dp_seconds(l, cl, fit, 1.0) ==
          Approx(4 * (share / (249.73e9 * 0.5) + 2 * share / (249.85e9 * 0.5))).epsilon(1e-12));
  }
  SECTION("latency: 2(n-1) ring steps per bucket for an all-reduce, n-1 per call otherwise, per layer under ZeRO-3") {
    // 2N bf16 bytes = 101.97 buckets of 25 MiB: 102; under tp 2, N/2 parameters: 51.
    StepFit slow = fit;
    slow.latency = 5e-6;
    PlanLayout l = dp_layout(256, 1, 1);
    INFO("exercise 10.1 (c): α = 5 µs: ZeRO-0 dp 256 waits 102 buckets × 2·255 steps");
    CHECK(dp_seconds(l, cl, slow, 1.0) - dp_seconds(l, cl, fit, 1.0) == Approx(102 * 2 * 255 * 5e-6).epsilon(1e-9));
    l.setup.tp = 2;
    CHECK(dp_seconds(l, cl, slow, 1.0) - dp_seconds(l, cl, fit, 1.0) == Approx(51 * 2 * 255 * 5e-6).epsilon(1e-9));
    l.setup.tp = 1;
    l.setup.zero = 2;  // a reduce-scatter per micro-batch and one all-gather: (gas + 1) · B · (n-1)
    l.gas = 4, l.setup.dp = 64;
    CHECK(dp_seconds(l, cl, slow, 1.0) - dp_seconds(l, cl, fit, 1.0) == Approx(5 * 102 * 63 * 5e-6).epsilon(1e-9));
    l.setup.zero = 3;  // per micro-batch and layer: gather, gather, scatter
    CHECK(dp_seconds(l, cl, slow, 1.0) - dp_seconds(l, cl, fit, 1.0) == Approx(4 * 3 * 16 * 63 * 5e-6).epsilon(1e-9));
    l.setup.pp = 2;  // 8 layers per stage
    CHECK(dp_seconds(l, cl, slow, 1.0) - dp_seconds(l, cl, fit, 1.0) == Approx(4 * 3 * 8 * 63 * 5e-6).epsilon(1e-9));
  }
  SECTION("overlap: the last micro-batch's backward hides ZeRO-0/1's all-reduce, every backward ZeRO-2/3's") {
    // compute 0.03 s over 4 micro-batches: each backward is 2/3 of 7.5 ms = 5 ms; overlap 0.25.
    PlanLayout l = dp_layout(8, 1, 4);
    StepFit hiding = fit;
    hiding.overlap = 0.25;
    for (int zero : {0, 1, 2, 3}) {
      l.setup.zero = zero;
      const double hidden = 0.25 * 0.005 * (zero <= 1 ? 1 : 4);
      INFO("exercise 10.1 (c): ZeRO-" << zero << ", 4 micro-batches of 5 ms backward, overlap 0.25: " << hidden
                                      << " s hidden");
      CHECK(dp_seconds(l, cl, hiding, 0.03) == Approx(dp_seconds(l, cl, fit, 0.03) - hidden).epsilon(1e-12));
    }
    // More backward than communication: nothing left, never less than nothing.
    l.setup.zero = 1;
    hiding.overlap = 1;
    CHECK(dp_seconds(l, cl, hiding, 1e6) == 0.0);
  }
  SECTION("in the step: the DP term is dp_seconds over the step's compute") {
    PlanLayout l = dp_layout(64, 1, 4);
    const StepTime t = step_time(l, cl);
    CHECK(t.dp == dp_seconds(l, cl, StepFit{}, t.compute));
    CHECK(t.dp > 0);
  }
}

TEST_CASE("exercise 10.1 (d): the pipeline's point to point, fill and drain included", "[plan]") {
  const Cluster cl = Cluster::playbook();
  StepFit fit;
  fit.latency = 5e-6;  // α: the shipped fit has 0 (kLatency), so the tests choose one
  fit.bandwidth_efficiency = 0.5;
  // The 8.86B model, dp 2 × pp 4, 8 micro-batches of one 4096-token sequence: each message is
  // 4096 × 4096 × 2 bytes; neighbouring stages are dp·tp·cp = 2 ranks apart, inside a node
  // (all-gather bus bandwidth 249.85 GB/s × 0.5); 2·8 messages and the 2·3 of the fill and drain.
  PlanLayout l = layout_886b(1, 4, 2, 8);
  const double one = 5e-6 + 4096.0 * 4096 * 2 / (249.85e9 * 0.5);
  INFO("exercise 10.1 (d): dp 2 × pp 4, 8 micro-batches: (16 + 6) messages of 32 MiB in a node");
  CHECK(pp_p2p_seconds(l, cl, fit) == Approx((16 + 6) * one).epsilon(1e-12));
  CHECK(step_time(l, cl, fit).pp_p2p == pp_p2p_seconds(l, cl, fit));
  // dp 8 puts neighbouring stages 8 ranks apart: another node, 2 nodes spanned (184.61 GB/s).
  l.setup.dp = 8;
  CHECK(pp_p2p_seconds(l, cl, fit) == Approx(22 * (5e-6 + 4096.0 * 4096 * 2 / (184.61e9 * 0.5))).epsilon(1e-12));
  // dp 2 × tp 2 × cp 2: stages 8 ranks apart (2 nodes), and a CP rank sends its 2048 tokens only.
  l.setup.dp = 2, l.setup.tp = 2, l.setup.cp = 2;
  INFO("exercise 10.1 (d): dp 2 × tp 2 × cp 2 × pp 4: 22 messages of 2048 × 4096 × 2 bytes over 2 nodes");
  CHECK(pp_p2p_seconds(l, cl, fit) == Approx(22 * (5e-6 + 2048.0 * 4096 * 2 / (184.61e9 * 0.5))).epsilon(1e-12));
  l.setup.pp = 1;
  CHECK(pp_p2p_seconds(l, cl, fit) == 0.0);
}

TEST_CASE("the step model's own terms against hand-worked numbers (step_terms.hpp)", "[plan]") {
  const Cluster cl = Cluster::playbook();
  SECTION("DP buckets: 25 MiB each, at least one") {
    // 2N bf16 bytes of the 1.34B model = 101.97 buckets of 26,214,400 bytes: 102.
    CHECK(gradient_buckets(2.0 * 1336477696) == 102);
    CHECK(gradient_buckets(1.0) == 1);
  }
  SECTION("small GEMMs: the linear blocks' HBM traffic, larger per FLOP as TP shrinks them") {
    // The 8.86B model (h 4096, 32 heads and 32 kv heads of 128, f 14336) at tp 8, one 4096-token
    // sequence: QKV [4096, 4096] x [4096, 1536], O [4096, 512] x [512, 4096], gate+up
    // [4096, 4096] x [4096, 3584], down [4096, 1792] x [1792, 4096]; each GEMM moves
    // 2(mk + kn + mn) bytes, 3 passes, 32 layers, at 3.35 TB/s.
    PlanLayout l = layout_886b(8, 1, 1, 1);
    const double m = 4096;
    auto moved = [&](double k, double n) { return 2 * (m * k + k * n + m * n); };
    const double per_layer = moved(4096, 1536) + moved(512, 4096) + moved(4096, 3584) + moved(1792, 4096);
    CHECK(per_layer == 2.0 * 4096 * 31232);
    CHECK(gemm_memory_seconds(l, cl) == Approx(32 * 3 * per_layer / 3.35e12).epsilon(1e-12));
    // Per FLOP (the compute term's share of a rank: 1/tp of the GEMMs), tp 8 moves more than tp 1.
    const double at8 = gemm_memory_seconds(l, cl) * 8;
    l.setup.tp = 1;
    CHECK(at8 > 1.3 * gemm_memory_seconds(l, cl));
    // Full recomputation runs the forward GEMMs again: 4 passes.
    l.setup.recompute = Recompute::full;
    const double full = gemm_memory_seconds(l, cl);
    l.setup.recompute = Recompute::none;
    CHECK(full == Approx(gemm_memory_seconds(l, cl) * 4 / 3).epsilon(1e-12));
    // A cluster without an HBM bandwidth leaves the term out.
    Cluster unknown = cl;
    unknown.hbm_bytes_per_second = 0;
    CHECK(gemm_memory_seconds(l, unknown) == 0.0);
  }
}

TEST_CASE("every layout the planner proposes fits in memory by usp_calc's model; the campaign's search", "[plan]") {
  const Cluster cl = Cluster::playbook();
  for (const char* model : {"playbook-1.34b", "playbook-3.57b", "playbook-8.86b", "playbook-80b"})
    for (int nodes : {1, 2, 4, 8, 16, 32, 64}) {
      INFO(model << " on " << nodes << " node(s)");
      const std::vector<PlannedLayout> all = search_layouts(PlanRequest{ModelConfig::builtin(model), nodes}, cl);
      for (const PlannedLayout& p : all) {
        CHECK(static_cast<double>(p.memory_bytes) <= cl.memory_bytes);
        CHECK(p.memory_bytes == layout_bytes(p.layout));
        CHECK(p.memory_bytes >= calc::memory_per_rank(p.layout.setup).total());  // the first stage's, at least
        CHECK(p.layout.world() == nodes * cl.gpus_per_node);
        CHECK(p.layout.setup.dp * p.layout.setup.mbs * p.layout.gas * 4096 == 1 << 20);
        CHECK(p.layout.setup.tp <= cl.gpus_per_node);
      }
      for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].mfu >= all[i].mfu);
      // Everything but the 80B model fits on one node. The 80B model's parameters, gradients and
      // Adam states are 16 bytes × 80B = 1.28 TB: 80 GB per GPU even fully sharded over 2 nodes'
      // 16 GPUs, so it fits from 4 nodes on (the playbook: "only near the memory limit").
      if (std::string(model) != "playbook-80b" || nodes >= 4) CHECK_FALSE(all.empty());
      else CHECK(all.empty());
    }
}

TEST_CASE("cluster files and bad requests", "[plan]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "usp_plan_test";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "mi250x.json").string();
  std::ofstream(file) << R"({"name": "four MI250X per node", "gpus_per_node": 8, "peak_tflops": 191.5, "memory_gb": 64,
    "bus_bandwidth_gbps": {"nodes": [1, 2], "all_reduce": [150, 50], "all_gather": [80, 30], "reduce_scatter": [80, 30]}})";
  const Cluster c = Cluster::from_file(file);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.peak_flops == 191.5e12);
  CHECK(c.bus(c.all_reduce, 1) == 150e9);
  CHECK(c.bus(c.all_reduce, 8) == 50e9);  // beyond the table: its last entry
  for (const PlannedLayout& p : search_layouts(PlanRequest{ModelConfig::builtin("playbook-1.34b"), 2}, c))
    CHECK(static_cast<double>(p.memory_bytes) <= 64e9);
  CHECK(c.hbm_bytes_per_second == 0.0);  // not given: the GEMM-memory term is left out
  // The Frontier study's sizes as built-in GPT-style shapes (config.cpp): v·h + L·(4h² + 3hf + 2h) + h,
  // tied, v = 50304; 22.05B, 174.6B and 1.008T parameters.
  CHECK(ModelConfig::builtin("frontier-22b").num_parameters() == 22'052'935'680);
  CHECK(ModelConfig::builtin("frontier-175b").num_parameters() == 174'566'682'624);
  CHECK(ModelConfig::builtin("frontier-1t").num_parameters() == 1'007'901'107'200);
  std::ofstream(file) << R"({"gpus_per_node": 8, "peak_tflops": 191.5})";
  CHECK_THROWS_AS(Cluster::from_file(file), UsageError);
  std::ofstream(file) << R"({"gpus_per_node": 8, "peak_tflops": 191.5, "memory_gb": 64, "hbm_tbps": -1.6,
    "bus_bandwidth_gbps": {"nodes": [1], "all_reduce": [150], "all_gather": [80], "reduce_scatter": [80]}})";
  CHECK_THROWS_WITH(Cluster::from_file(file), Catch::Contains("hbm_tbps must be > 0"));
  CHECK_THROWS_WITH(search_layouts(PlanRequest{ModelConfig::builtin("playbook-1.34b"), 0}, c), Catch::Contains("--nodes must be >= 1"));
  CHECK_THROWS_WITH(search_layouts(PlanRequest{ModelConfig::builtin("playbook-1.34b"), 1, 4096, 1000}, c),
                    Catch::Contains("must be a multiple of --seq"));
  CHECK_THROWS_WITH(ModelConfig::builtin("playbook-2b"), Catch::Contains("unknown model 'playbook-2b'"));
  // A world that does not factor with the asked tp, and TP across nodes where the cluster forbids it.
  PlanRequest odd{ModelConfig::builtin("playbook-8.86b"), 1};
  odd.tp = 3;
  CHECK_THROWS_WITH(search_layouts(odd, Cluster::playbook()), Catch::Contains("--tp 3 does not divide the 8 GPUs"));
  PlanRequest wide{ModelConfig::builtin("playbook-8.86b"), 2};
  wide.tp = 16;
  CHECK_THROWS_WITH(search_layouts(wide, Cluster::playbook()), Catch::Contains("keeps tensor parallelism inside a node"));
  Cluster open = Cluster::playbook();
  open.tp_within_node = false;
  for (const PlannedLayout& p : search_layouts(wide, open)) CHECK(p.layout.setup.tp == 16);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ties: the layouts within the step model's own error of the best are counted, not ranked", "[plan]") {
  auto with_mfu = [](std::vector<double> m) {
    std::vector<PlannedLayout> v;
    for (double x : m) {
      PlannedLayout p;
      p.mfu = x;
      v.push_back(p);
    }
    return v;
  };
  CHECK(tied_with_best({}) == 0);
  CHECK(tied_with_best(with_mfu({0.30})) == 1);
  // Band 4%: 0.40 · 0.96 = 0.384, so 0.385 is tied and 0.383 is not; at the default band (6%:
  // 0.376) both are, and 0.3765 too.
  CHECK(tied_with_best(with_mfu({0.40, 0.395, 0.385, 0.383, 0.30}), 0.04) == 3);
  CHECK(tied_with_best(with_mfu({0.40, 0.395, 0.385, 0.383, 0.3765, 0.3755, 0.30})) == 5);
  CHECK(tied_with_best(with_mfu({0.40, 0.395, 0.385, 0.383, 0.30}), 0.02) == 2);  // 0.392
  // On the playbook's cluster the 8.86B model at 4 nodes has many layouts within that error.
  const PlanRequest req{ModelConfig::builtin("playbook-8.86b"), 4, 4096, 1 << 20, 0, 0};
  const std::vector<PlannedLayout> all = search_layouts(req, Cluster::playbook());
  const std::size_t tied = tied_with_best(all);
  REQUIRE(tied >= 2);
  for (std::size_t i = 0; i < all.size(); ++i)
    CHECK((i < tied) == (all[i].mfu >= (1 - kModelError) * all[0].mfu));
  // The campaign's cells carry the same count (campaign.csv's tied_with_best, the heatmap's mark),
  // and 0 where nothing fits.
  const std::vector<ch10::CampaignCell> cells = ch10::run_campaign({"playbook-8.86b", "playbook-80b"}, {4, 1}, Cluster::playbook());
  REQUIRE(cells.size() == 4);
  CHECK(cells[0].tied == tied);
  CHECK(cells[0].best.mfu == all[0].mfu);
  CHECK(cells[3].fitting == 0);
  CHECK(cells[3].tied == 0);
}

TEST_CASE("the shipped constants are the fit on the DP series; the leave-one-out error", "[plan]") {
  const Cluster cl = Cluster::playbook();
  const std::vector<MeasuredPoint>& series = playbook_dp_series();
  REQUIRE(series.size() == 6);
  const StepFit fit = fit_step_model(series, cl, ModelTerms::after);
  INFO("fitted: compute " << fit.compute_efficiency << ", bandwidth " << fit.bandwidth_efficiency << ", overlap "
                          << fit.overlap << ", latency " << fit.latency);
  // step_model.hpp ships the fit rounded to 3 digits; α goes to 0 (see kLatency).
  CHECK(fit.compute_efficiency == Approx(kComputeEfficiency).epsilon(0.005));
  CHECK(fit.bandwidth_efficiency == Approx(kBandwidthEfficiency).epsilon(0.005));
  CHECK(fit.overlap == Approx(kOverlap).margin(0.002));
  CHECK(fit.latency == Approx(kLatency).margin(1e-9));
  // Leave one out: each point predicted by the fit on the other five. Its largest error is the
  // step model's error on a point it did not see, the band within which layouts are a tie.
  const std::vector<double> after = leave_one_out(series, cl, ModelTerms::after);
  const std::vector<double> before = leave_one_out(series, cl, ModelTerms::before);
  double worst_after = 0, worst_before = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    INFO("DP " << series[i].dp << ": measured " << series[i].mfu << ", held out: before " << before[i] << ", after " << after[i]);
    worst_after = std::max(worst_after, std::fabs(after[i] - series[i].mfu) / series[i].mfu);
    worst_before = std::max(worst_before, std::fabs(before[i] - series[i].mfu) / series[i].mfu);
    // A held-out prediction differs from the all-points fit's (the fit saw the point).
    CHECK(after[i] != mfu(dp_series_layout(series[i]), cl));
  }
  CHECK(worst_after <= kModelError);
  CHECK(worst_after > kModelError - 0.01);  // kModelError is it rounded up, not a wider band
  CHECK(worst_before == Approx(0.064).margin(0.001));  // the lesson's numbers
  CHECK(worst_after == Approx(0.057).margin(0.001));
  // The "before" model is the old one: no latency, no HBM term; its fit is three constants.
  CHECK(fit_step_model(series, cl, ModelTerms::before).latency == 0.0);
}
