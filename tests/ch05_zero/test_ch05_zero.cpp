// Chapter 05: ZeRO-1/2/3. The shard arithmetic and the per-unit plan; the per-unit ParamStore;
// the ZeRO-1 step (exercise 05.1) against an all-reduce and a full AdamW step; every stage
// against the single-rank baseline on dp ranks, with and without gradient accumulation; the
// memory each rank keeps against the ZeRO formulas, exactly; the bytes each stage communicates;
// ZeRO-3's bound on gathered units and its traces. The [mpi] cases run on 1, 2 and 4 ranks.
// [gpu]: every stage with the state on a GPU per rank over the device communicator (NCCL, or host
// staging when ranks share a GPU) against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "common/calc/memory_model.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/device.hpp"
#include "common/numeric_compare.hpp"
#include "common/rng.hpp"
#include "common/trace.hpp"
#include "common/train/training_flags.hpp"
#include "common/train/training_summary.hpp"
#include "chapters/05_zero/stage_run.hpp"
#include "chapters/05_zero/zero1_step.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/filled_tensor.hpp"
#include "tests/support/single_rank_validation.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch05;
using namespace usp::testing;

namespace {

// usp-tiny (Ψ = 131392: N_d = 2 and 4 divide it and each of its units) on short sequences.
TrainingConfig tiny() { return small_training(ModelConfig::builtin("usp-tiny"), /*seq=*/16, /*mbs=*/1, /*steps=*/3); }

// A model whose sizes N_d = 4 does not divide (Ψ = 1998 = 4·499 + 2; its head unit, the final
// norm's 6 elements, neither), with a tied head: padding on the last ranks, and the head reading
// the embedding's unit.
TrainingConfig odd_tied() {
  TrainingConfig cfg = tiny();
  cfg.model = testing::small_model(
      {.name = "odd-tied", .hidden = 6, .layers = 2, .heads = 1, .kv_heads = 1, .ffn = 4, .tied_embeddings = true});
  return cfg;
}

std::vector<ZeroOptions> all_stages(bool fp32_accum = false) {
  return {{0, true, fp32_accum},
          {1, true, fp32_accum},
          {2, true, fp32_accum},
          {3, true, fp32_accum},
          {3, false, fp32_accum}};
}

Run zero_run(Communicator& dp, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data, std::int64_t k,
             const ZeroOptions& o) {
  ZeroTrainer t(dp, cfg, o);
  Run run;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const double local = t.step(rank_micro_batches(data, step, dp.rank(), k, cfg.mbs, cfg.seq));
    run.losses.push_back(mean_over_ranks(metrics, local));
    if (step == 0) run.grad0 = t.averaged_gradient(metrics);
  }
  run.params = t.full_parameters(metrics);
  run.max_units_held = t.max_units_held();
  return run;
}

}  // namespace

// ---- shards and the plan (pure functions) ----------------------------------------------------

TEST_CASE("shards: N_d equal parts of ceil(n / N_d), the real elements covered once", "[ch05]") {
  for (std::int64_t n : {0, 1, 2, 7, 10, 1998, 131392}) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      INFO("n = " << n << ", N_d = " << ranks);
      std::int64_t covered = 0;
      for (int r = 0; r < ranks; ++r) {
        const Shard s = shard_of(n, ranks, r);
        CHECK(s.size == (n + ranks - 1) / ranks);
        CHECK(s.begin == r * s.size);
        CHECK(s.begin == (r == 0 ? 0 : shard_of(n, ranks, r - 1).end()));  // back to back
        CHECK(s.owned == std::clamp<std::int64_t>(n - s.begin, 0, s.size));
        if (s.owned > 0) CHECK(s.begin + s.owned <= n);
        covered += s.owned;
      }
      CHECK(covered == n);                                    // every real element once
      CHECK(ranks * shard_of(n, ranks, 0).size - n < ranks);  // less than one element of padding per rank
    }
  }
  // The header's picture: 10 elements over 4 ranks.
  CHECK(shard_of(10, 4, 3).owned == 1);
  CHECK(shard_of(10, 4, 2).owned == 3);
}

TEST_CASE("the per-unit plan: gathers, prefetches, releases and gradient reductions", "[ch05]") {
  for (int units : {3, 4, 6}) {
    for (bool tied : {false, true}) {
      for (bool prefetch : {false, true}) {
        INFO("units " << units << (tied ? " tied" : "") << (prefetch ? " prefetch" : ""));
        const auto plan = unit_schedule(units, tied, prefetch);
        REQUIRE(plan.size() == static_cast<std::size_t>(2 * units));
        std::vector<int> opened(static_cast<std::size_t>(units), 0), reduced(static_cast<std::size_t>(units), 0);
        for (std::size_t i = 0; i < plan.size(); ++i) {
          const UnitStep& s = plan[i];
          const bool backward = i >= static_cast<std::size_t>(units);
          CHECK(s.backward == backward);
          CHECK(s.unit == (backward ? 2 * units - 1 - static_cast<int>(i) : static_cast<int>(i)));
          // What a step reads: its unit, and the embedding for a tied head.
          std::set<int> reads(s.reads.begin(), s.reads.end());
          std::set<int> want = {s.unit};
          if (tied && s.unit == units - 1) want.insert(0);
          CHECK(reads == want);
          // Every unit read is gathered now or was prefetched by the previous step, never both.
          const std::vector<int> none;
          const std::vector<int>& before = i > 0 ? plan[i - 1].prefetch : none;
          for (int u : s.reads) {
            const bool now = std::count(s.gather.begin(), s.gather.end(), u) == 1;
            const bool earlier = std::count(before.begin(), before.end(), u) == 1;
            CHECK(now != earlier);
          }
          // Prefetches are for the next step, of units not in use now; and only with prefetch on.
          for (int u : s.prefetch) {
            CHECK(prefetch);
            CHECK(reads.count(u) == 0);
            REQUIRE(i + 1 < plan.size());
            CHECK(std::count(plan[i + 1].reads.begin(), plan[i + 1].reads.end(), u) == 1);
          }
          CHECK(std::set<int>(s.release.begin(), s.release.end()) == reads);  // freed once used
          for (int u : s.open_grads) {
            CHECK(backward);
            ++opened[static_cast<std::size_t>(u)];
          }
          for (int u : s.reduce_grads) {
            CHECK(backward);
            CHECK(opened[static_cast<std::size_t>(u)] == 1);  // reduced after it was opened
            ++reduced[static_cast<std::size_t>(u)];
          }
        }
        for (int u = 0; u < units; ++u) {
          CHECK(opened[static_cast<std::size_t>(u)] == 1);
          CHECK(reduced[static_cast<std::size_t>(u)] == 1);
        }
        // Untied: each unit's gradient lives exactly during its own backward step.
        if (!tied)
          for (const UnitStep& s : plan)
            if (s.backward)
              CHECK((s.open_grads == std::vector<int>{s.unit} && s.reduce_grads == std::vector<int>{s.unit}));
        // Tied: the embedding's gradient opens with the head's backward and is reduced after its own.
        if (tied) {
          CHECK(plan[static_cast<std::size_t>(units)].open_grads == std::vector<int>{units - 1, 0});
          CHECK(plan.back().reduce_grads == std::vector<int>{0});
        }
        // Memory bound: current + prefetched units. Untied: 2 (1 without prefetch); tied: the
        // head step holds the embedding too, and the step before it prefetches both.
        CHECK(max_units_held(plan) == (tied ? 2 : 1) + (prefetch ? (tied ? 1 : 1) : 0));
        // Every unit gathered twice per micro-batch (forward and backward): 2Ψ; a tied embedding
        // twice more, for the head's forward and backward.
        const auto gathers = gathers_per_unit(plan, units);
        for (int u = 0; u < units; ++u) CHECK(gathers[static_cast<std::size_t>(u)] == (tied && u == 0 ? 4 : 2));
      }
    }
  }
}

// ---- the per-unit ParamStore -----------------------------------------------------------------

TEST_CASE("a per-unit ParamStore: materialize, release, views, and shards initialised alone", "[ch05]") {
  const ModelConfig cfg = odd_tied().model;
  ParamStore flat(cfg);  // the default layout, as every earlier chapter uses it
  flat.init(7);
  REQUIRE(flat.flat().numel() == flat.numel());
  REQUIRE(flat.padded_numel() == flat.numel());

  ParamStore units(cfg, DType::f32, Device::cpu(), StoreLayout{Residency::per_unit, Residency::per_unit, 4});
  CHECK_FALSE(units.flat().defined());
  CHECK_FALSE(units.params_materialized(1));
  // Using a released unit is a clear error.
  CHECK_THROWS_WITH(units.param("model.layers.0.mlp.up_proj.weight"), Catch::Contains("not materialized"));
  CHECK_THROWS_WITH(units.grad(0), Catch::Contains("not materialized"));

  // Materializing allocates exactly the unit's padded buffer; releasing frees it.
  const MemoryTracker& tracker = MemoryTracker::instance();
  for (int u = 0; u < units.num_units(); ++u) {
    const auto [begin, end] = units.unit_range(u);
    const std::int64_t padded = units.unit_padded_numel(u);
    CHECK(padded % 4 == 0);
    CHECK(padded - (end - begin) < 4);
    const std::int64_t before = tracker.current()[MemCategory::Parameter];
    units.materialize_params(u);
    CHECK(tracker.current()[MemCategory::Parameter] - before == padded * 4);
  }
  CHECK(units.materialized_param_units() == units.num_units());
  units.init(7);
  for (int i = 0; i < static_cast<int>(units.infos().size()); ++i)  // the same values as the flat store
    CHECK(units.param(i).to_floats() == flat.param(i).to_floats());
  units.release_params(1);
  CHECK_THROWS_WITH(units.param("model.layers.0.input_layernorm.weight"), Catch::Contains("unit 1"));
  CHECK(units.materialized_param_units() == units.num_units() - 1);

  // init_range: any range of the flat layout, in any dtype, without a full buffer; zero tail.
  for (DType dt : {DType::f32, DType::bf16}) {
    ParamStore narrow(cfg, dt);
    narrow.init(7);
    const std::vector<float> all = narrow.flat().to_floats();
    for (auto [b, e] :
         std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 10}, {1530, 1800}, {1900, 1998}, {5, 5}}) {
      INFO(dtype_name(dt) << " [" << b << ", " << e << ")");
      Tensor out = Tensor::empty({e - b + 3}, dt);
      out.fill(5.0f);
      units.init_range(7, b, e, out);  // the store's own dtype does not matter: out's does
      std::vector<float> want(all.begin() + b, all.begin() + e);
      want.insert(want.end(), 3, 0.0f);
      CHECK(elementwise_mismatch(out.to_floats(), want) == "");
    }
  }
}

// ---- exercise 05.1 ---------------------------------------------------------------------------

namespace {

// Rank q's gradient at a step: multiples of 2^-12 in (-1, 1), so that every partial sum of
// N_d <= 4 of them is exact in fp32 whatever the order, and dividing by N_d = 1, 2 or 4 too.
float gradient_of(int q, int step, std::int64_t e) {
  const float u =
      rng::uniform(static_cast<std::uint64_t>(100 + step), "zero-grad", static_cast<std::uint64_t>(q) * 1000000 + e);
  return std::round((2.0f * u - 1.0f) * 4095.0f) / 4096.0f;
}

// One ZeRO-1 store next to a plain one with the same parameters, its shard S = P / N_d (pad_to
// a multiple of N_d: N_d, or more to leave the last ranks with padding only).
struct Zero1Setup {
  ParamStore zero, ref;
  Shard shard;
  Zero1Setup(Communicator& comm, std::int64_t pad_to)
      : zero(odd_tied().model, DType::f32, Device::cpu(), StoreLayout{Residency::flat, Residency::flat, pad_to}),
        ref(odd_tied().model) {
    zero.init(3);
    ref.init(3);
    shard = shard_of(zero.padded_numel(), comm.size(), comm.rank());
    shard.owned = std::clamp<std::int64_t>(zero.numel() - shard.begin, 0, shard.size);
  }
  // The optimizer of this rank's real elements (an empty range past Ψ when it owns none).
  AdamW optimizer(const AdamWConfig& adam) const {
    if (shard.owned == 0) return AdamW(zero.infos(), adam, shard.begin, shard.begin, Tensor());
    return AdamW(zero, adam, shard.begin, shard.owned_end());
  }
};

// Two steps of zero1_step against an all-reduce and a full AdamW step, the gradients' padding
// NaN (it is no gradient): the reduced shard, the returned norm and the parameters, on every rank.
void check_zero1_steps(Communicator& comm, std::int64_t pad_to) {
  const int n = comm.size(), r = comm.rank();
  const AdamWConfig adam;
  Zero1Setup z(comm, pad_to);
  AdamW zero_opt = z.optimizer(adam);
  AdamW ref_opt(z.ref, adam);
  CHECK(zero_opt.m().numel() == z.shard.owned);  // 1/N_d of the optimizer states
  Tensor reduced = Tensor::zeros({z.shard.size}, DType::f32, MemCategory::CommBuffer);
  const bool exact = (n & (n - 1)) == 0;
  for (int step = 0; step < 2; ++step) {
    std::vector<float> mine(static_cast<std::size_t>(z.zero.padded_numel()), std::nanf("")),
        mean(static_cast<std::size_t>(z.ref.numel()), 0.0f);
    double norm2 = 0;
    for (std::int64_t e = 0; e < z.ref.numel(); ++e) {
      mine[static_cast<std::size_t>(e)] = gradient_of(r, step, e);
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += gradient_of(q, step, e);
      mean[static_cast<std::size_t>(e)] = sum / static_cast<float>(n);
      norm2 += static_cast<double>(mean[static_cast<std::size_t>(e)]) * mean[static_cast<std::size_t>(e)];
    }
    Tensor grads = Tensor::from_floats(mine, {z.zero.padded_numel()});
    z.ref.flat_grad().copy_from(Tensor::from_floats(mean, {z.ref.numel()}));
    reduced.fill(std::nanf(""));  // whatever the buffer held before

    const double norm = zero1_step(comm, z.zero, zero_opt, grads, reduced);
    ref_opt.step(z.ref);
    const std::string on_rank = ", rank " + std::to_string(r);
    CHECK(tensor_problem(reduced, "exercise 05.1: reduced" + on_rank, {z.shard.size}, DType::f32) == "");
    CHECK(tensor_problem(z.zero.padded_flat(), "exercise 05.1: params.padded_flat()" + on_rank, {z.zero.padded_numel()},
                         DType::f32) == "");

    // CHECKs, not REQUIREs: every rank goes on to the next step's collectives whatever it found.
    INFO("exercise 05.1, rank " << r << " of " << n << ", step " << step << ", P = " << z.zero.padded_numel()
                                << ", shard [" << z.shard.begin << ", " << z.shard.end() << "), owned "
                                << z.shard.owned);
    std::vector<float> want(static_cast<std::size_t>(z.shard.size), 0.0f);
    for (std::int64_t i = 0; i < z.shard.owned; ++i)
      want[static_cast<std::size_t>(i)] = mean[static_cast<std::size_t>(z.shard.begin + i)];
    // N_d = 3, 5: a division by N_d and a reordered sum, a few ulps of 1.
    const Tolerance sum_order = exact ? Tolerance::exact() : Tolerance::absolute(4e-7);
    INFO("reduced: this rank's shard of the averaged gradient, then zeros");
    CHECK(elementwise_mismatch(reduced.to_floats(), want, sum_order, r) == "");
    INFO("the returned norm: the averaged gradient's over its real elements, " << std::sqrt(norm2));
    CHECK(std::fabs(norm - std::sqrt(norm2)) <= 1e-6 * std::sqrt(norm2));
    // After AdamW the update is at most lr per element; a few-ulp gradient difference moves it
    // by at most 1e-3 of that.
    const Tolerance update = exact ? Tolerance::exact() : Tolerance::absolute(2 * adam.lr * 1e-3);
    INFO("the parameters: every element as the all-reduce and a full AdamW step leave it");
    CHECK(elementwise_mismatch(z.zero.flat().to_floats(), z.ref.flat().to_floats(), update, r) == "");
    // The padding stays zero: it is not a parameter.
    const std::vector<float> padded = z.zero.padded_flat().to_floats();
    const std::vector<float> tail(padded.begin() + z.zero.numel(), padded.end());
    INFO("the parameters' padding [" << z.zero.numel() << ", " << padded.size() << "): zeros");
    CHECK(elementwise_mismatch(tail, std::vector<float>(tail.size(), 0.0f), Tolerance::exact(), r) == "");
  }
}

}  // namespace

TEST_CASE("exercise 05.1: the ZeRO-1 step equals an all-reduce and a full AdamW step", "[ch05][mpi]") {
  check_zero1_steps(world(), world().size());  // Ψ = 1998: on 4 ranks the last owns 498 of 500
}

TEST_CASE("exercise 05.1: padded further, ranks whose shard is all padding take part too", "[ch05][mpi]") {
  // S = 1024 whatever N_d: on 2 ranks the second owns 974, on 4 the last two own nothing.
  check_zero1_steps(world(), 1024 * world().size());
}

TEST_CASE("exercise 05.1: the ZeRO-1 step refuses inconsistent buffers before any collective", "[ch05][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  const AdamWConfig adam;
  Zero1Setup z(comm, n);
  AdamW opt = z.optimizer(adam);
  const std::int64_t P = z.zero.padded_numel(), S = z.shard.size;
  Tensor grads = Tensor::zeros({P});
  Tensor reduced = Tensor::zeros({S});
  auto range = [](std::int64_t b, std::int64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + ")"; };
  INFO("exercise 05.1, rank " << r << " of " << n << ": the error's message must start with the contract's text");
  SECTION("grads of another size") {
    Tensor wrong = Tensor::zeros({P + 1});
    CHECK_THROWS_WITH(zero1_step(comm, z.zero, opt, wrong, reduced),
                      Catch::StartsWith("zero1_step: grads has " + std::to_string(P + 1) +
                                        " elements, the padded parameters " + std::to_string(P)));
  }
  SECTION("reduced of another size") {
    Tensor wrong = Tensor::zeros({S + 1});
    CHECK_THROWS_WITH(zero1_step(comm, z.zero, opt, grads, wrong),
                      Catch::StartsWith("zero1_step: reduced has " + std::to_string(S + 1) + " elements, a shard " +
                                        std::to_string(S)));
  }
  SECTION("reduced of another dtype") {
    Tensor wrong = Tensor::zeros({S}, DType::bf16);
    CHECK_THROWS_WITH(zero1_step(comm, z.zero, opt, grads, wrong),
                      Catch::StartsWith("zero1_step: reduced is bf16, grads f32"));
  }
  SECTION("an optimizer over another range") {
    AdamW short_opt(z.zero, adam, z.shard.begin, z.shard.owned_end() - 1);
    CHECK_THROWS_WITH(zero1_step(comm, z.zero, short_opt, grads, reduced),
                      Catch::StartsWith("zero1_step: the optimizer covers " +
                                        range(z.shard.begin, z.shard.owned_end() - 1) + ", rank " + std::to_string(r) +
                                        " owns " + range(z.shard.begin, z.shard.owned_end())));
  }
  SECTION("a store not padded to N_d") {
    ParamStore unpadded(odd_tied().model, DType::f32, Device::cpu(), StoreLayout{Residency::flat, Residency::flat, 1});
    unpadded.init(3);
    if (unpadded.padded_numel() % n != 0) {  // Ψ = 1998: on 4 ranks
      Tensor g = Tensor::zeros({unpadded.padded_numel()});
      CHECK_THROWS_WITH(zero1_step(comm, unpadded, opt, g, reduced),
                        Catch::StartsWith("zero1_step: P = " + std::to_string(unpadded.padded_numel()) +
                                          " padded parameters do not split into N_d = " + std::to_string(n) +
                                          " shards"));
    }
  }
  // After a refusal every rank still meets the others: one good step, in step on every rank.
  CHECK_NOTHROW(zero1_step(comm, z.zero, opt, grads, reduced));
}

// ---- every stage = the single-rank baseline ----------------------------------------------------

TEST_CASE("every ZeRO stage trains like the single-rank baseline, with and without accumulation", "[ch05][mpi]") {
  auto& dp = world();
  auto metrics = dp.split(0, dp.rank());
  const int n = dp.size();
  for (const TrainingConfig& cfg : {tiny(), odd_tied()}) {
    const auto data = make_dataset("synthetic", cfg.seed);
    for (std::int64_t k : {1, 2}) {
      const Run base = baseline(cfg, *data, n * k);
      const double gmax = max_abs(base.grad0);
      REQUIRE(gmax > 0);
      for (const ZeroOptions& o : all_stages()) {
        INFO(cfg.model.name << ", N_d = " << n << ", k = " << k << ", " << stage_label(o));
        const Run z = zero_run(dp, *metrics, cfg, *data, k, o);
        const double dg = max_abs_diff(z.grad0, base.grad0), dw = max_abs_diff(z.params, base.params);
        double dw_conditioned = 0;  // over the weights whose gradient was never small (below)
        for (std::size_t e = 0; e < z.params.size(); ++e)
          if (base.min_grad[e] >= 1e-2 * gmax)
            dw_conditioned = std::max(dw_conditioned, std::fabs(static_cast<double>(z.params[e]) - base.params[e]));
        UNSCOPED_INFO("max|Δg|/max|g| = " << dg / gmax << ", max|Δw| = " << dw << " (" << dw_conditioned
                                          << " where |g| >= 1e-2 max|g|)");
        // The first step's loss: every micro-batch runs the same ops on the same weights as in
        // the baseline, bit for bit; only the double sum of the N_d·k means is grouped
        // differently (per rank first).
        CHECK(std::fabs(z.losses[0] - base.losses[0]) <= 1e-13 * base.losses[0]);
        // The first step's averaged gradient: the same N_d·k per-micro-batch contributions,
        // summed in another order (per rank, then across ranks by MPI) and scaled by 1/k, 1/N_d
        // instead of 1/(N_d·k) (powers of two: exact). fp32 reassociation of ≤ 8 terms, and of
        // the matmul's own accumulation into a non-zero gradient, moves an element by a few ulps
        // of the largest terms: measured ≤ 1.5e-7 of the largest element, bounded by 1e-6. A
        // missed average (×N_d), a lost micro-batch or a unit reduced twice is an O(1) error.
        CHECK(dg <= 1e-6 * gmax);
        // Parameters after 3 AdamW steps. Where the gradient stayed ≥ 1e-2 of the largest, its
        // relative error is ≤ 1e-6/1e-2 = 1e-4, and AdamW's step lr·m̂/(√v̂ + eps), homogeneous
        // of degree 0 in g, moves by ≤ lr·1e-4 per step: 3 steps · 3e-3 · 1e-4 = 9e-7, plus 2
        // ulps of 1 (2.4e-7) for the rounding of w itself (measured ≤ 2e-7).
        CHECK(dw_conditioned <= 9e-7 + 2.4e-7);
        // Everywhere: where g is within rounding of 0, the step can move by lr·|Δg|/eps, which no
        // useful bound limits (measured ≤ 5e-6 on 4 ranks); 1e-4 is a thirtieth of one update,
        // so a weight that missed an update or got another rank's shard (off by ~lr) fails.
        CHECK(dw <= 1e-4);
        // Later losses follow the parameters: measured ≤ 1e-8 off, bounded by 1e-6 relative.
        for (std::size_t s = 1; s < base.losses.size(); ++s)
          CHECK(std::fabs(z.losses[s] - base.losses[s]) <= 1e-6 * base.losses[s]);
        if (o.stage == 3)
          CHECK(z.max_units_held == max_units_held(unit_schedule(static_cast<int>(cfg.model.layers) + 2,
                                                                 cfg.model.tied_embeddings, o.prefetch)));
      }
    }
  }
}

TEST_CASE("in bf16, with and without fp32 accumulation, every stage follows the baseline", "[ch05][mpi]") {
  auto& dp = world();
  auto metrics = dp.split(0, dp.rank());
  const int n = dp.size();
  TrainingConfig cfg = tiny();
  cfg.dtype = DType::bf16;
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t k = 2;
  // The baseline's first gradient: each micro-batch's backward in bf16 (as every rank computes
  // it), the N_d·k of them added in fp32.
  ParamStore p(cfg.model, cfg.dtype);
  p.init(cfg.seed);
  Model m(p, cfg.model_options());
  std::vector<double> sum(static_cast<std::size_t>(p.numel()), 0.0);
  double loss = 0;
  for (std::int64_t i = 0; i < n * k; ++i) {
    p.zero_grad();
    const Batch b = data->batch(0, i * cfg.mbs, cfg.mbs, cfg.seq);
    loss += m.forward(b.inputs, b.targets);
    m.backward(1.0f / static_cast<float>(n * k));
    const std::vector<float> g = p.flat_grad().to_floats();
    for (std::size_t e = 0; e < g.size(); ++e) sum[e] += g[e];
  }
  loss /= static_cast<double>(n * k);
  const std::vector<float> g_ref(sum.begin(), sum.end());
  const double gmax = max_abs(g_ref);
  const Run dp_run = zero_run(dp, *metrics, cfg, *data, k, {0, true, false});
  for (bool fp32_accum : {false, true}) {
    for (const ZeroOptions& o : all_stages(fp32_accum)) {
      INFO(stage_label(o) << (fp32_accum ? " + fp32 accumulation" : "") << ", N_d = " << n);
      const Run z = zero_run(dp, *metrics, cfg, *data, k, o);
      const double dg = max_abs_diff(z.grad0, g_ref);
      UNSCOPED_INFO("max|Δg|/max|g| = " << dg / gmax << ", max|Δw| vs DP = " << max_abs_diff(z.params, dp_run.params));
      // Same bf16 weights, same batches: the first loss is the baseline's (double grouping only).
      CHECK(std::fabs(z.losses[0] - loss) <= 1e-13 * loss);
      // The averaged gradient: the same bf16 per-micro-batch gradients, added in bf16 (by the
      // model, then by MPI) unless accumulated in fp32 and, for ZeRO-2/3, rounded to bf16 once
      // more per micro-batch on the wire. Each bf16 addition rounds by ≤ 2^-9 of its result;
      // ≤ N_d·k = 8 of them stay below 8·2^-9 ≈ 1.6e-2 of the largest element. A lost
      // micro-batch or a shard added twice is an error of the size of a whole gradient.
      CHECK(dg <= 1.6e-2 * gmax);
      // The parameters stay within bf16 rounding of plain DP's after 3 steps: each step moves a
      // weight by about lr = 3e-3, less than half a bf16 ulp near 1 (2^-8 ≈ 3.9e-3), so whether
      // a norm weight's update survives the rounding from its fp32 master copy can differ:
      // at most one ulp of [1, 2) (2^-7) per step, 3·2^-7 ≈ 2.3e-2 in all (measured ≤ 8.4e-3;
      // the gradient measured ≤ 4.3e-3 of its largest element off).
      CHECK(max_abs_diff(z.params, dp_run.params) <= 3 * 0.0078125);
      for (std::size_t s = 1; s < z.losses.size(); ++s)
        CHECK(std::fabs(z.losses[s] - dp_run.losses[s]) <= 1e-3 * dp_run.losses[s]);
    }
  }
}

// ---- memory and communication against the formulas --------------------------------------------

namespace {

calc::TrainingSetup setup_of(const TrainingConfig& cfg, int ranks, int stage, bool fp32_accum) {
  calc::TrainingSetup s = calc_setup(cfg);
  s.fp32_grad_accum = fp32_accum;
  s.dp = ranks;
  s.zero = stage;
  return s;
}

}  // namespace

TEST_CASE("each rank keeps exactly the ZeRO formula's bytes, and sends the playbook's volumes", "[ch05][mpi]") {
  auto& dp = world();
  auto metrics = dp.split(0, dp.rank());
  const int n = dp.size(), r = dp.rank();
  struct Precision {
    DType dtype;
    bool fp32_accum;
  };
  for (const TrainingConfig& base_cfg : {tiny(), odd_tied()}) {
    for (const Precision prec :
         {Precision{DType::f32, false}, Precision{DType::bf16, false}, Precision{DType::bf16, true}}) {
      TrainingConfig cfg = base_cfg;
      cfg.dtype = prec.dtype;
      cfg.steps = 1;
      const auto data = make_dataset("synthetic", cfg.seed);
      const std::int64_t psi = cfg.model.num_parameters();
      const std::int64_t b = static_cast<std::int64_t>(dtype_size(cfg.dtype));
      for (std::int64_t k : {1, 2}) {
        std::vector<std::uint64_t> sent;  // per stage config: bytes this rank sent in the step
        for (ZeroOptions o : all_stages(prec.fp32_accum)) {
          INFO(cfg.model.name << ", " << dtype_name(cfg.dtype) << (prec.fp32_accum ? " + fp32 accumulation" : "")
                              << ", N_d = " << n << ", rank " << r << ", k = " << k << ", " << stage_label(o));
          VariantRunner runner(*metrics, {.config = cfg, .tokens_per_step = n * k * cfg.tokens_per_micro_batch(),
                                          .progress = {.quiet = true}});
          const StageResult res = run_stage(runner, dp, *metrics, cfg, *data, k, o);
          // The state kept between steps, measured by the tracker, equals the exact count
          // (padding included: state_bytes.hpp)...
          const StateBytes want = zero_state_bytes(cfg.model, cfg.dtype, o.stage, n, r, prec.fp32_accum);
          CHECK(res.resident[MemCategory::Parameter] == want.parameters);
          CHECK(res.resident[MemCategory::Gradient] == want.gradients);
          CHECK(res.resident[MemCategory::OptimizerState] == want.optimizer);
          CHECK(res.resident[MemCategory::Activation] == 0);
          // ... and, where N_d divides every unit (usp-tiny on 1, 2, 4 ranks: no padding), the
          // playbook's formulas as the calculator states them: 2Ψ+2Ψ+kΨ/N_d, 2Ψ+(2+k)Ψ/N_d,
          // (4+k)Ψ/N_d for mixed precision (and 4Ψ-based for fp32), k = 12 (8 in fp32).
          if (cfg.model.name == "usp-tiny") {
            const calc::MemoryBreakdown m = calc::memory_per_rank(setup_of(cfg, n, o.stage, prec.fp32_accum));
            CHECK(res.resident[MemCategory::Parameter] == m.parameters);
            CHECK(res.resident[MemCategory::Gradient] == m.gradients);
            CHECK(res.resident[MemCategory::OptimizerState] == m.optimizer);
            // The same in words: what is divided by N_d, stage by stage.
            const std::int64_t kadam = cfg.dtype == DType::f32 ? 8 : 12, g = b + (prec.fp32_accum ? 4 : 0);
            CHECK(m.parameters == (o.stage >= 3 ? b * psi / n : b * psi));
            CHECK(m.gradients == (o.stage >= 2 ? g * psi / n : g * psi));
            CHECK(m.optimizer == (o.stage >= 1 ? kadam * psi / n : kadam * psi));
          }
          // ZeRO-3 held at most the current and the prefetched units' full parameters.
          if (o.stage == 3) CHECK(res.max_units_held == (cfg.model.tied_embeddings ? 2 : 1) + (o.prefetch ? 1 : 0));
          sent.push_back(res.comm.total_sent());
          // The collectives each stage uses, and only those: ZeRO-1's one all-reduce per step is
          // the gradient norm's, one fp32 number.
          if (o.stage == 1) {
            CHECK(res.comm.count(CommOp::all_reduce) == static_cast<std::uint64_t>(cfg.steps));
            CHECK(res.comm.payload_bytes[static_cast<int>(CommOp::all_reduce)] == static_cast<std::uint64_t>(4 * cfg.steps));
          } else {
            CHECK((res.comm.count(CommOp::all_reduce) > 0) == (o.stage == 0));
          }
          CHECK((res.comm.count(CommOp::reduce_scatter) > 0) == (o.stage >= 1));
          CHECK((res.comm.count(CommOp::all_gather) > 0) == (o.stage >= 1));
        }
        // Communicated volume per step. With the gradients reduced in the parameters' dtype
        // (no fp32 accumulation) and no padding: the ring all-reduce of DP sends 2(N_d-1)/N_d·bΨ
        // per rank; ZeRO-1 a reduce-scatter and an all-gather of (N_d-1)/N_d·bΨ each (the same);
        // ZeRO-2 one reduce-scatter per micro-batch and one all-gather ((k+1)/2 of DP: the same
        // for k = 1); ZeRO-3 per micro-batch an all-gather in forward, one in backward and a
        // reduce-scatter (3k/2 of DP: 1.5× for k = 1). ZeRO-1 adds one fp32 number, the norm.
        if (cfg.model.name != "usp-tiny" || prec.fp32_accum) continue;
        INFO(dtype_name(cfg.dtype) << ", N_d = " << n << ", k = " << k);
        const std::uint64_t dp_bytes = static_cast<std::uint64_t>(2 * (n - 1) * b * psi / n);
        CHECK(sent[0] == dp_bytes);
        CHECK(sent[1] == dp_bytes + comm_volume(CommOp::all_reduce, 4, n, r).bytes_sent);  // + the norm
        CHECK(2 * sent[2] == static_cast<std::uint64_t>(k + 1) * dp_bytes);
        CHECK(2 * sent[3] == static_cast<std::uint64_t>(3 * k) * dp_bytes);
        CHECK(sent[4] == sent[3]);  // prefetching changes when, not how much
        if (k == 1) {
          CHECK(sent[2] == sent[0]);
          CHECK(2 * sent[3] == 3 * sent[0]);
        }
      }
    }
  }
}

// ---- --eval-every: the held-out loss (stage_run.hpp's validation hook) ---------------------------

TEST_CASE("--eval-every: every stage's held-out loss is the single-rank one of its parameters, off its books",
          "[ch05][mpi]") {
  auto& dp = world();
  auto metrics = dp.split(0, dp.rank());
  const int n = dp.size();
  for (const TrainingConfig& cfg : {tiny(), odd_tied()}) {
    const auto data = make_dataset("synthetic", cfg.seed);
    const std::int64_t batches = 3;  // not a multiple of N_d = 2 or 4: the last rank evaluates fewer
    const Run base = baseline(cfg, *data, n);
    const double base_val = single_rank_validation(cfg, base.params, *data, batches);
    for (const ZeroOptions& o : all_stages()) {
      INFO(cfg.model.name << ", N_d = " << n << ", rank " << dp.rank() << ", " << stage_label(o));
      const std::int64_t tokens = n * cfg.tokens_per_micro_batch();
      VariantRunner plain(*metrics, {.config = cfg, .tokens_per_step = tokens, .progress = {.quiet = true}});
      const StageResult without = run_stage(plain, dp, *metrics, cfg, *data, 1, o);
      VariantRunner evaluating(*metrics, {.config = cfg, .tokens_per_step = tokens,
                                          .progress = {.eval_every = 2, .eval_batches = batches, .quiet = true}});
      const StageResult with = run_stage(evaluating, dp, *metrics, cfg, *data, 1, o, "", batches);
      // After step 1 (every 2nd) and after the last (2 of 3 steps).
      REQUIRE(with.val_steps == std::vector<std::int64_t>{1, 2});
      REQUIRE(with.val_losses.size() == 2);
      CHECK(without.val_steps.empty());
      // The last evaluation is of the final parameters: the ranks' batches summed in batch order
      // give the single-rank evaluation's bits (validation_loss.hpp).
      CHECK(with.val_losses.back() == single_rank_validation(cfg, with.parameters, *data, batches));
      // ... and follows the single-rank baseline's parameters like the training losses do
      // (measured ≤ 1e-8 off, bounded by 1e-6 relative: the test above).
      CHECK(std::fabs(with.val_losses.back() - base_val) <= 1e-6 * base_val);
      CHECK(with.val_losses.front() != with.val_losses.back());  // evaluated after different steps
      // The evaluations change nothing the stage measures: the same losses (bits), the bytes this
      // rank sent on dp, its resident state and its peaks.
      CHECK(with.losses == without.losses);
      CHECK(with.comm.total_sent() == without.comm.total_sent());
      CHECK(with.resident.bytes == without.resident.bytes);
      CHECK(with.peak.bytes == without.peak.bytes);
    }
  }
}

// ---- ZeRO-3's traces ------------------------------------------------------------------------------

TEST_CASE("ZeRO-3 traces: prefetched all-gathers are in flight while the previous unit computes", "[ch05][mpi]") {
  auto& dp = world();
  auto metrics = dp.split(0, dp.rank());
  TrainingConfig cfg = tiny();
  cfg.steps = 1;
  const auto data = make_dataset("synthetic", cfg.seed);
  const int units = static_cast<int>(cfg.model.layers) + 2;
  Tracer& tracer = Tracer::instance();
  for (bool prefetch : {true, false}) {
    INFO((prefetch ? "prefetch" : "no prefetch"));
    ZeroTrainer t(dp, cfg, ZeroOptions{3, prefetch, false});
    tracer.clear();
    tracer.align(*metrics);
    tracer.enable(true);
    t.step(rank_micro_batches(*data, 0, dp.rank(), 1, cfg.mbs, cfg.seq));
    tracer.enable(false);
    metrics->barrier();
    std::vector<Span> compute, gathers, reductions;
    for (const Span& s : tracer.spans()) {
      if (s.stream == "compute") compute.push_back(s);
      if (s.stream == "comm window" && s.name.rfind("all_gather", 0) == 0) gathers.push_back(s);
      if (s.stream == "comm window" && s.name.rfind("reduce_scatter", 0) == 0) reductions.push_back(s);
    }
    // One compute span per unit and pass; two gathers per unit (forward, backward); one
    // reduce-scatter per unit.
    CHECK(compute.size() == 2 * static_cast<std::size_t>(units));
    CHECK(gathers.size() == 2 * static_cast<std::size_t>(units));
    CHECK(reductions.size() == static_cast<std::size_t>(units));
    // A gather's window (launch → wait) spans a unit's compute exactly when it was prefetched:
    // as many as the plan prefetches (3 in forward, 3 in backward here), none without prefetch.
    std::size_t prefetched = 0;
    for (const UnitStep& s : t.plan()) prefetched += s.prefetch.size();
    CHECK(prefetched == (prefetch ? 2 * static_cast<std::size_t>(units - 1) : 0));
    std::size_t overlapping = 0;
    for (const Span& g : gathers) {
      bool over = false;
      for (const Span& c : compute) over = over || (g.start_us < c.start_us && c.end_us <= g.end_us);
      overlapping += over ? 1 : 0;
    }
    CHECK(overlapping == prefetched);
    // Each reduce-scatter but the last runs while the next unit's backward computes.
    std::size_t reduce_overlapping = 0;
    for (const Span& r : reductions)
      for (const Span& c : compute) reduce_overlapping += (r.start_us < c.start_us && c.end_us <= r.end_us) ? 1 : 0;
    CHECK(reduce_overlapping == static_cast<std::size_t>(units - 1));
  }
}

TEST_CASE("every ZeRO stage on a device (GPUs, else the emulated cpu:1) follows the CPU baseline",
          "[ch05][mpi][gpu]") {
  const testing::GpuRanks gpus = testing::device_ranks();  // NCCL, or host-staged MPI
  auto metrics = world().split(0, world().rank());
  const int n = world().size();
  TrainingConfig cfg = odd_tied();  // padding on the last ranks, the tied head
  const auto data = make_dataset("synthetic", cfg.seed);
  const Run base = baseline(cfg, *data, n);  // on the CPU
  cfg = gpus.on_gpu(cfg);
  const std::unique_ptr<Communicator>& dp = gpus.tensors;
  for (const ZeroOptions& o : all_stages()) {
    INFO("N_d = " << n << " on " << cfg.device.str() << ", " << stage_label(o));
    const Run z = zero_run(*dp, *metrics, cfg, *data, 1, o);
    // CPU vs CUDA: fp32 in other summation orders (cuBLAS vs OpenBLAS, block reductions), a few
    // ulps per op; over three AdamW steps 1e-5 of the loss and 1e-4 of the weights' magnitude, as
    // tests/model/test_model_cuda.cpp bounds the single-device model.
    for (std::size_t s = 0; s < base.losses.size(); ++s) {
      INFO("step " << s << ": " << z.losses[s] << ", baseline " << base.losses[s]);
      CHECK(std::fabs(z.losses[s] - base.losses[s]) <= 1e-5 * base.losses[s]);
    }
    INFO("max|Δw| " << max_abs_diff(z.params, base.params) << ", max|w| " << max_abs(base.params));
    CHECK(max_abs_diff(z.params, base.params) <= 1e-4 * max_abs(base.params));
  }
}
