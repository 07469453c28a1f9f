// Chapter 09: expert parallelism. The exchange (exercises 09.1 and 09.2): every row reaches the
// rank of its expert, grouped by local expert, and comes back to its place bit for bit; the counts
// every rank learns are the transpose of what the others sent. Training a MoE with its experts
// spread over ep ranks (ep = W; dp = W with ep 1; dp 4 with ep 2 on 4 ranks), dropless and with a
// capacity: the same losses, first gradient and parameters as the single-rank MoE, the same
// tokens per expert and drops as its router decides, and the all-to-all bytes exactly the rows
// that left each rank. [mpi]: 1, 2 and 4 ranks. [gpu]: the same layouts with a GPU per rank over
// the device communicator (NCCL, or host staging when ranks share a GPU) against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "chapters/09_expert_parallel/ep_run.hpp"
#include "chapters/09_expert_parallel/ep_trainer.hpp"
#include "common/report/row_gather.hpp"
#include "common/device.hpp"
#include "common/rng.hpp"
#include "common/train/training_summary.hpp"
#include "tests/support/baseline_bounds.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/single_rank_validation.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch09;
using namespace usp::testing;

namespace {

// 8 experts (4 ranks hold 2 each), top-2, sizes that are not powers of two.
TrainingConfig ep_training(double capacity_factor) {
  return small_training(small_model({.name = "ep-test", .vocab = 256, .hidden = 24, .layers = 2, .heads = 4,
                                      .kv_heads = 2, .ffn = 20, .experts = 8, .experts_per_token = 2,
                                      .capacity_factor = capacity_factor, .router_aux_loss_coef = 0.01}),
                        /*seq=*/12, /*mbs=*/2, /*steps=*/3);
}

// The values of this store's parameters, taken from a flat vector in the single-device layout.
std::vector<float> as_held(const std::vector<float>& full_flat, const ModelConfig& model, const ParamStore& held) {
  const std::vector<ParamInfo> full = llama_param_layout(model);
  std::map<std::string, std::int64_t> offset;
  for (const ParamInfo& p : full) offset[p.name] = p.offset;
  std::vector<float> out;
  for (const ParamInfo& p : held.infos()) {
    const auto begin = full_flat.begin() + offset.at(p.name);
    out.insert(out.end(), begin, begin + p.numel);
  }
  return out;
}

}  // namespace

TEST_CASE("exercise 09.1: the dispatch puts every row at its expert, grouped by expert; the combine brings it back bit for bit", "[ch09][mpi]") {
  Communicator& w = world();
  const int W = w.size();
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::int64_t E = 4 * W, C = 5, L = E / W;
    INFO(dtype_name(dt) << ", rank " << w.rank());
    AllToAllExperts ex(w, E);
    // Rank r sends (r + e) % 3 rows to expert e (some zero); row values name (rank, expert, i).
    std::vector<std::int64_t> counts(static_cast<std::size_t>(E));
    for (std::int64_t e = 0; e < E; ++e) counts[static_cast<std::size_t>(e)] = (w.rank() + e) % 3;
    std::int64_t R = 0;
    for (auto n : counts) R += n;
    auto value = [](std::int64_t r, std::int64_t e, std::int64_t i, std::int64_t c) {
      return static_cast<float>(r * 1000 + e * 10 + i) + 0.25f * static_cast<float>(c);  // exact in bf16 up to 256
    };
    std::vector<float> v;
    for (std::int64_t e = 0; e < E; ++e)
      for (std::int64_t i = 0; i < counts[static_cast<std::size_t>(e)]; ++i)
        for (std::int64_t c = 0; c < C; ++c) v.push_back(dt == DType::f32 ? value(w.rank(), e, i, c) : static_cast<float>((e * 8 + i) % 64) + 0.25f * c);
    Tensor rows32 = Tensor::from_floats(v, {R, C});
    Tensor rows = Tensor::empty({R, C}, dt);
    convert_from_float(rows32.data<float>(), dt, rows.raw(), static_cast<std::size_t>(R * C));

    const ExpertRoute route = ex.route(counts);
    // What this rank receives from s for its local expert j is what s sends: (s + e) % 3, e = rank·L + j.
    for (int s = 0; s < W; ++s)
      for (std::int64_t j = 0; j < L; ++j)
        CHECK(route.recv_by_expert[static_cast<std::size_t>(s * L + j)] == (s + w.rank() * L + j) % 3);
    std::int64_t R_in = 0;
    for (auto n : route.recv_counts) R_in += n;
    Tensor received = Tensor::empty({R_in, C}, dt);
    ex.to_experts(route, rows, received);
    if (dt == DType::f32) {
      // Grouped by local expert, then source, then the source's order: the exact values expected.
      std::vector<float> want;
      for (std::int64_t j = 0; j < L; ++j)
        for (int s = 0; s < W; ++s)
          for (std::int64_t i = 0; i < (s + w.rank() * L + j) % 3; ++i)
            for (std::int64_t c = 0; c < C; ++c) want.push_back(value(s, w.rank() * L + j, i, c));
      CHECK(elementwise_mismatch(received.to_floats(), want, Tolerance::exact(), w.rank()) == "");
    }
    Tensor back = Tensor::empty({R, C}, dt);
    ex.from_experts(route, received, back);
    CHECK(elementwise_mismatch(back.to_floats(), rows.to_floats(), Tolerance::exact(), w.rank()) == "");
  }
}

TEST_CASE("exercise 09.2: the combine alone sends results grouped by local expert back to the rows they came from", "[ch09][mpi]") {
  // The route and the experts' layout written out by hand (no dispatch): rank s sends
  // (s + e) % 3 rows to expert e; the results are the received rows themselves (identity experts),
  // so the return trip must give every rank its own rows back, in place.
  Communicator& w = world();
  const int W = w.size();
  const std::int64_t E = 4 * W, C = 3, L = E / W, me = w.rank();
  INFO("rank " << me);
  AllToAllExperts ex(w, E);
  auto value = [](std::int64_t r, std::int64_t e, std::int64_t i, std::int64_t c) {
    return static_cast<float>(r * 1000 + e * 10 + i) + 0.25f * static_cast<float>(c);
  };
  ExpertRoute route;
  route.send_counts.assign(static_cast<std::size_t>(W), 0);
  route.recv_counts.assign(static_cast<std::size_t>(W), 0);
  route.recv_by_expert.assign(static_cast<std::size_t>(E), 0);
  std::vector<float> mine;
  for (std::int64_t e = 0; e < E; ++e) {
    const std::int64_t n = (me + e) % 3;
    route.send_counts[static_cast<std::size_t>(e / L)] += n;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t c = 0; c < C; ++c) mine.push_back(value(me, e, i, c));
  }
  for (int s = 0; s < W; ++s)
    for (std::int64_t j = 0; j < L; ++j) {
      const std::int64_t n = (s + me * L + j) % 3;
      route.recv_by_expert[static_cast<std::size_t>(s * L + j)] = n;
      route.recv_counts[static_cast<std::size_t>(s)] += n;
    }
  std::vector<float> results;  // grouped by local expert, then source, then the source's order
  for (std::int64_t j = 0; j < L; ++j)
    for (int s = 0; s < W; ++s)
      for (std::int64_t i = 0; i < (s + me * L + j) % 3; ++i)
        for (std::int64_t c = 0; c < C; ++c) results.push_back(value(s, me * L + j, i, c));
  const std::int64_t R = static_cast<std::int64_t>(mine.size()) / C, R_in = static_cast<std::int64_t>(results.size()) / C;
  Tensor back = Tensor::empty({R, C});
  ex.from_experts(route, Tensor::from_floats(results, {R_in, C}), back);
  CHECK(elementwise_mismatch(back.to_floats(), mine, Tolerance::exact(), w.rank()) == "");
}

TEST_CASE("exercise 09.2: the combine refuses a route or tensors that do not match, before anything is sent",
          "[ch09][mpi]") {
  // Every rank sends one row to every expert, so every rank receives L rows from every source;
  // each case breaks one thing, alike on every rank (each throws before the exchange: none waits).
  Communicator& w = world();
  const std::int64_t ep = w.size(), E = 2 * ep, L = 2, C = 3;
  INFO("rank " << w.rank());
  AllToAllExperts ex(w, E);
  ExpertRoute route;
  route.send_counts.assign(static_cast<std::size_t>(ep), L);
  route.recv_counts.assign(static_cast<std::size_t>(ep), L);
  route.recv_by_expert.assign(static_cast<std::size_t>(E), 1);
  const Tensor results = Tensor::zeros({ep * L, C});
  Tensor rows = Tensor::zeros({E, C});
  const std::string n = std::to_string(ep), nL = std::to_string(ep * L);
  SECTION("a route for another group") {
    ExpertRoute r = route;
    r.recv_by_expert.pop_back();
    CHECK_THROWS_WITH(ex.from_experts(r, results, rows),
                      "from_experts: the route has " + n + " send counts, " + n + " receive counts and " +
                          std::to_string(ep * L - 1) + " blocks; the group needs ep = " + n + " and ep·L = " + nL);
  }
  SECTION("blocks that do not add up to their source's count") {
    ExpertRoute r = route;
    r.recv_by_expert[static_cast<std::size_t>(ep * L - 1)] = 2;  // the last source's last block
    CHECK_THROWS_WITH(ex.from_experts(r, results, rows), "from_experts: the route's blocks from rank " +
                                                             std::to_string(ep - 1) + " hold 3 rows, its receive count 2");
  }
  SECTION("results and rows of different widths") {
    CHECK_THROWS_WITH(ex.from_experts(route, Tensor::zeros({ep * L, C + 1}), rows),
                      "from_experts: results [" + nL + ", 4] and rows [" + std::to_string(E) +
                          ", 3] are not [n, C] of one width C");
  }
  SECTION("one result too many") {
    CHECK_THROWS_WITH(ex.from_experts(route, Tensor::zeros({ep * L + 1, C}), rows),
                      "from_experts: results has " + std::to_string(ep * L + 1) + " rows, the route received " + nL);
  }
  SECTION("one row too few") {
    Tensor short_rows = Tensor::zeros({E - 1, C});
    CHECK_THROWS_WITH(ex.from_experts(route, results, short_rows),
                      "from_experts: rows has " + std::to_string(E - 1) + " rows, the route sent " + std::to_string(E));
  }
  SECTION("rows of another dtype") {
    Tensor bf = Tensor::zeros({E, C}, DType::bf16);
    CHECK_THROWS_WITH(ex.from_experts(route, results, bf), "from_experts: results are f32, rows bf16");
  }
}

TEST_CASE("EP training equals the single-rank MoE: losses, gradients, parameters, routing, bytes", "[ch09][mpi]") {
  Communicator& w = world();
  const int W = w.size();
  auto metrics = w.split(0, w.rank());
  std::vector<EpLayout> layouts = {{W, W}, {W, 1}};
  if (W == 4) layouts.push_back({4, 2});
  for (double cf : {0.0, 1.0}) {
    const TrainingConfig cfg = ep_training(cf);
    const auto data = make_dataset("synthetic", cfg.seed);
    for (const EpLayout& layout : layouts) {
      if (W == 1 && layout.ep == 1 && &layout != &layouts.front()) continue;  // the same layout twice
      const std::int64_t k = 2;  // micro-batches per rank and step
      INFO(layout.label() << (cf > 0 ? ", capacity factor 1" : ", dropless") << ", rank " << w.rank());
      const testing::Run base = testing::baseline(cfg, *data, layout.dp * k);
      EpTrainer trainer(w, cfg, layout);
      std::vector<double> losses;
      std::vector<float> grad0;
      for (std::int64_t step = 0; step < cfg.steps; ++step) {
        trainer.ep().reset_stats();
        const std::vector<Batch> mine = rank_micro_batches(*data, step, trainer.dp().rank(), k, cfg.mbs, cfg.seq);
        losses.push_back(testing::mean_over_ranks(*metrics, trainer.step(mine)));
        if (step == 0) grad0 = trainer.params().flat_grad().to_floats();
        if (step != 0) continue;
        // The routing the trainer saw is what one device's router decides on the same tokens.
        ParamStore one(cfg.model);
        one.init(cfg.seed);
        Model single(one, cfg.model_options());
        std::vector<std::int64_t> routed, kept, dropped;
        for (const Batch& b : mine) {
          single.evaluate(b.inputs, b.targets);
          for (std::size_t l = 0; l < single.routing().size(); ++l) {
            const MoeRouting& r = single.routing()[l];
            routed.resize(single.routing().size() * r.routed.size(), 0);
            kept.resize(routed.size(), 0);
            dropped.resize(single.routing().size(), 0);
            for (std::size_t e = 0; e < r.routed.size(); ++e) {
              routed[l * r.routed.size() + e] += r.routed[e];
              kept[l * r.routed.size() + e] += r.kept[e];
            }
            dropped[l] += r.dropped;
          }
        }
        std::vector<std::int64_t> got_routed, got_kept, got_dropped;
        for (const MoeRouting& r : trainer.routing()) {
          got_routed.insert(got_routed.end(), r.routed.begin(), r.routed.end());
          got_kept.insert(got_kept.end(), r.kept.begin(), r.kept.end());
          got_dropped.push_back(r.dropped);
        }
        CHECK(got_routed == routed);
        CHECK(got_kept == kept);
        CHECK(got_dropped == dropped);
        if (cf > 0) CHECK(std::accumulate(dropped.begin(), dropped.end(), std::int64_t{0}) > 0);
        // Bytes: each layer and micro-batch moves the rows to the experts and back, forward and
        // backward (four all-to-all-v of [rows, C] f32); this rank puts on the wire the rows it
        // sends to other ranks' experts and the results of other ranks' rows it computed.
        const std::int64_t E = cfg.model.experts, L = E / layout.ep, me = trainer.ep().rank();
        const auto all_kept = report::gather_row_lists(trainer.ep(), got_kept);
        std::int64_t out = 0, in = 0;
        for (std::size_t s = 0; s < all_kept.size(); ++s)
          for (std::int64_t l = 0; l < cfg.model.layers; ++l)
            for (std::int64_t e = 0; e < E; ++e) {
              const std::int64_t n = all_kept[s][static_cast<std::size_t>(l * E + e)];
              const bool mine_expert = e / L == me;
              if (static_cast<std::int64_t>(s) == me && !mine_expert) out += n;
              if (static_cast<std::int64_t>(s) != me && mine_expert) in += n;
            }
        const std::uint64_t expected = static_cast<std::uint64_t>(2 * (out + in) * cfg.model.hidden * 4);
        CHECK(trainer.ep().stats().sent(CommOp::all_to_allv) == expected);
      }
      const std::vector<float> params = trainer.params().flat().to_floats();
      // Every expert's rows are the same rows as on one device (each computed by one GEMM over
      // its rows, now in source order), the dense gradients an average over the dp ranks: fp32
      // reassociation, a few ulps (6e-8) of the largest terms; 2e-6 of the largest element.
      // A row at the wrong expert, a result combined into the wrong token or an expert gradient
      // averaged over the wrong group is an O(1) relative error.
      check_grad_near_baseline(grad0, as_held(base.grad0, cfg.model, trainer.params()), w.rank());
      check_losses_near_baseline(losses, base.losses);
      // After 3 AdamW steps: the rounding above through Adam's normalised update (≤ lr per
      // element and step; a gradient within rounding of zero has an arbitrary sign): lr/30.
      check_params_near_baseline(params, as_held(base.params, cfg.model, trainer.params()), cfg.adamw.lr, w.rank());
    }
  }
}

TEST_CASE("--eval-every: each EP layout's held-out loss follows the single-rank one, off its books", "[ch09][mpi]") {
  Communicator& w = world();
  const int W = w.size();
  auto metrics = w.split(0, w.rank());
  std::vector<EpLayout> layouts = {{W, W}, {W, 1}};
  if (W == 4) layouts.push_back({4, 2});
  const std::int64_t batches = 2 * W;  // a multiple of the ranks (check_ep_eval_batches)
  for (double cf : {0.0, 1.0}) {
    const TrainingConfig cfg = ep_training(cf);
    const auto data = make_dataset("synthetic", cfg.seed);
    for (const EpLayout& layout : layouts) {
      INFO(layout.label() << (cf > 0 ? ", capacity factor 1" : ", dropless") << ", rank " << w.rank());
      const testing::Run base = testing::baseline(cfg, *data, layout.dp);
      const double base_val = testing::single_rank_validation(cfg, base.params, *data, batches);
      const EpVariant variant{layout, true, 1};
      const std::int64_t tokens = W * cfg.tokens_per_micro_batch();
      VariantRunner plain(*metrics, {.config = cfg, .tokens_per_step = tokens, .progress = {.quiet = true}});
      const EpResult without = run_ep_variant(plain, w, *metrics, cfg, *data, variant);
      VariantRunner evaluating(*metrics, {.config = cfg, .tokens_per_step = tokens,
                                          .progress = {.eval_every = 2, .eval_batches = batches, .quiet = true}});
      const EpResult with = run_ep_variant(evaluating, w, *metrics, cfg, *data, variant, "", batches);
      REQUIRE(with.val_steps == std::vector<std::int64_t>{1, 2});  // every 2nd step, and the last of 3
      REQUIRE(with.val_losses.size() == 2);
      CHECK(without.val_steps.empty());
      // Each held-out batch through the same rows at the same experts as on one device (the
      // routing test above), from parameters that follow the baseline's: like the training losses,
      // bounded by 1e-6 relative. A token's rows at the wrong expert, or a batch evaluated twice or
      // not at all, is an O(1e-2) change.
      CHECK(std::fabs(with.val_losses.back() - base_val) <= 1e-6 * base_val);
      CHECK(with.val_losses.front() != with.val_losses.back());
      // The evaluations change nothing the variant measures: the losses (bits), the routing, the
      // all-to-all bytes per step and every rank's peak.
      CHECK(with.losses == without.losses);
      CHECK(with.kept == without.kept);
      CHECK(with.a2a_bytes == without.a2a_bytes);
      CHECK(with.peak_total == without.peak_total);
    }
  }
}

TEST_CASE("--eval-batches must be a multiple of the ranks for EP (one clear message)", "[ch09]") {
  CHECK_NOTHROW(check_ep_eval_batches(8, 4));
  CHECK_THROWS_WITH(check_ep_eval_batches(3, 2),
                    Catch::Contains("--eval-batches 3 is not a multiple of the 2 ranks"));
}

TEST_CASE("EP training on a device (GPUs, else the emulated cpu:1) follows the CPU's single-rank MoE",
          "[ch09][mpi][gpu]") {
  const auto gpus = testing::device_ranks();
  Communicator& w = world();
  const int W = w.size();
  auto metrics = w.split(0, w.rank());
  Communicator& tensors = *gpus.tensors;
  std::vector<EpLayout> layouts = {{W, W}};
  if (W == 4) layouts.push_back({4, 2});
  for (double cf : {0.0, 1.0}) {
    const TrainingConfig cfg = ep_training(cf);
    const TrainingConfig gpu_cfg = gpus.on_gpu(cfg);
    const auto data = make_dataset("synthetic", cfg.seed);
    for (const EpLayout& layout : layouts) {
      INFO(layout.label() << (cf > 0 ? ", capacity factor 1" : ", dropless") << " on " << gpus.where()
                          << ", rank " << w.rank());
      const testing::Run base = testing::baseline(cfg, *data, layout.dp * 2);  // on the CPU
      EpTrainer trainer(tensors, gpu_cfg, layout);
      std::vector<double> losses;
      for (std::int64_t step = 0; step < cfg.steps; ++step)
        losses.push_back(testing::mean_over_ranks(
            *metrics, trainer.step(rank_micro_batches(*data, step, trainer.dp().rank(), 2, cfg.mbs, cfg.seq))));
      // The routing's decisions are the host's on the device's logits: the same as the CPU's
      // unless two experts' probabilities tie within ulps (not so on these random weights).
      testing::check_losses_follow(losses, base.losses);
      // The weights within lr/30 (a thirtieth of one update).
      CHECK(elementwise_mismatch(trainer.params().flat().to_floats(), as_held(base.params, cfg.model, trainer.params()),
                                 Tolerance::absolute(cfg.adamw.lr / 30), w.rank()) == "");
    }
  }
}
