// Chapter 07: training with context parallelism. Every attention (ring, all-gather, all-to-all)
// with either layout (contiguous, zig-zag) trains like the single-rank baseline: the same losses,
// first gradient and parameters after 3 AdamW steps. The work each rank's attention did, as the
// run recorded it: zig-zag balances it, contiguous gives rank r r + 1 blocks. What the all-gather
// holds while it computes; the bytes each variant sends per step against its count; bad layouts
// refused with one message. The [mpi] cases run on 1, 2 and 4 ranks with cp = the world size (and
// dp 2 × cp 2 on 4). [gpu]: every attention and layout with a GPU per rank over the device
// communicator (NCCL, or host staging when ranks share a GPU) against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/cp_run.hpp"
#include "chapters/07_context_parallel/cp_trainer.hpp"
#include "common/report/row_gather.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/data/tokens_at.hpp"
#include "common/device.hpp"
#include "common/memory_tracker.hpp"
#include "common/rng.hpp"
#include "tests/support/baseline_bounds.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/single_rank_validation.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch07;
using namespace usp::testing;

namespace {

// Heads and kv heads that 1, 2 and 4 divide (the all-to-all splits them), grouped-query attention
// (2 query heads per kv head), and a sequence that 2·4 chunks divide (zig-zag on 4 ranks).
TrainingConfig cp_training() {
  return small_training(
      small_model({.name = "cp-test", .vocab = 256, .hidden = 32, .layers = 2, .heads = 8, .kv_heads = 4, .ffn = 48}),
      /*seq=*/16, /*mbs=*/2, /*steps=*/3);
}

constexpr CpAttention kAttentions[] = {CpAttention::ring, CpAttention::all_gather, CpAttention::all_to_all};
constexpr CpSharding kShardings[] = {CpSharding::contiguous, CpSharding::zigzag};

// cp = W with every attention and layout, and on 4 ranks dp 2 × cp 2 too.
std::vector<CpLayout> layouts_for(int W) {
  std::vector<CpLayout> out;
  for (CpAttention a : kAttentions)
    for (CpSharding s : kShardings) {
      out.push_back({1, W, s, a});
      if (W == 4) out.push_back({2, 2, s, a});
    }
  return out;
}

testing::Run cp_run(Communicator& w, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data,
                    const CpLayout& layout, std::int64_t k) {
  CpTrainer trainer(w, cfg, layout);
  testing::Run run;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    // Every cp rank of a replica takes the replica's micro-batches (whole sequences).
    const double local = trainer.step(rank_micro_batches(data, step, trainer.dp().rank(), k, cfg.mbs, cfg.seq));
    run.losses.push_back(testing::mean_over_ranks(metrics, local));  // equal token counts: the global mean
    // Every rank holds the whole model: its gradient after the dp × cp average is the global one.
    if (step == 0) run.grad0 = trainer.params().flat_grad().to_floats();
  }
  run.params = trainer.params().flat().to_floats();
  return run;
}

}  // namespace

// ---- training = the single-rank baseline ------------------------------------------------------------

TEST_CASE("every CP attention and layout on a device (GPUs, else the emulated cpu:1) trains like the CPU baseline",
          "[ch07][mpi][gpu]") {
  const auto gpus = testing::device_ranks();
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = cp_training();
  const TrainingConfig gpu_cfg = gpus.on_gpu(cfg);
  const auto data = make_dataset("synthetic", cfg.seed);
  for (const CpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << " on " << gpus.where() << ", rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp);  // on the CPU
    const testing::Run got = cp_run(*gpus.tensors, *metrics, gpu_cfg, *data, layout, 1);
    testing::check_losses_follow(got.losses, base.losses);
    // The weights within lr/30 (a thirtieth of one update) as above.
    CHECK(elementwise_mismatch(got.params, base.params, Tolerance::absolute(cfg.adamw.lr / 30), w.rank()) == "");
  }
}

TEST_CASE("every CP attention and layout trains like the single-rank baseline", "[ch07][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = cp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  for (const CpLayout& layout : layouts_for(w.size())) {
    const std::int64_t k = layout.dp > 1 ? 2 : 1;  // dp × cp also accumulates 2 micro-batches
    INFO(layout.label() << ", " << k << " micro-batch(es) per replica, rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp * k);
    const testing::Run got = cp_run(w, *metrics, cfg, *data, layout, k);
    // The first loss: the same model on the same tokens, each rank's mean over its tokens
    // averaged in double; the attention sums over the keys in another order (blocks merged by
    // their lse, or one block over the gathered keys) with exp in fp32. A few fp32 ulps (6e-8
    // relative each): bounded by 1e-6 (16 ulps). A token at a wrong position (RoPE) or a key
    // missing from a query's softmax is an O(1e-2) change. Measured ≤ 2e-8 relative.
    CHECK(std::fabs(got.losses[0] - base.losses[0]) <= 1e-6 * base.losses[0]);
    // The first gradient: W ranks' partial gradients averaged (fp32 reassociation), the
    // attention's backward summed per block: a few ulps of the largest terms. Bounded by 2e-6 of
    // the largest element (measured ≤ 2.7e-7 of it). A missing dK/dV contribution of another
    // rank's queries, or a rank whose gradient is left out of the average, is an O(1) error.
    check_grad_near_baseline(got.grad0, base.grad0, w.rank());
    // After 3 AdamW steps: the differences above through Adam's normalised update (≤ lr per
    // element and step), where a gradient within rounding of zero has an arbitrary sign; lr/30
    // is a thirtieth of one update, so a weight that missed one or got a wrong one fails
    // (measured |Δw| ≤ 6.2e-6).
    check_losses_near_baseline(got.losses, base.losses);
    check_params_near_baseline(got.params, base.params, cfg.adamw.lr, w.rank());
  }
}

TEST_CASE("bf16: every CP attention and layout trains like the single-rank bf16 baseline", "[ch07][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  TrainingConfig cfg = cp_training();
  cfg.dtype = DType::bf16;  // parameters, gradients and activations in bf16, fp32 master weights
  cfg.steps = 2;
  const auto data = make_dataset("synthetic", cfg.seed);
  const testing::Run base = testing::baseline(cfg, *data, 1);
  for (CpAttention a : kAttentions)
    for (CpSharding s : kShardings) {
      const CpLayout layout{1, w.size(), s, a};
      INFO(layout.label() << ", bf16, rank " << w.rank());
      const testing::Run got = cp_run(w, *metrics, cfg, *data, layout, 1);
      // The same model on the same tokens: each attention sums its blocks in fp32 in another order
      // and rounds the output to bf16 once, as one device does; a rounding can land one bf16 step
      // (2^-8 relative) apart where the fp32 sums straddle a rounding boundary, and the loss
      // averages such flips over the batch's tokens. One bf16 step of the loss itself would be
      // systematic, not rounding: 2^-8 relative is the bound (common/train/loss_agreement.hpp's).
      // A wrong position or a missing key block changes the loss by far more (the fp32 test's
      // O(1e-2)). Measured: at most 9.2e-5 (the second step; the first agrees to 1e-15).
      for (std::size_t step = 0; step < got.losses.size(); ++step)
        CHECK(std::fabs(got.losses[step] - base.losses[step]) <= std::ldexp(1.0, -8) * base.losses[step]);
    }
}

// ---- --eval-every: the held-out loss in the layout (cp_run.hpp's validation hook) ----------------

TEST_CASE("--eval-every: each CP layout's held-out loss is the single-rank one of its parameters, off its books",
          "[ch07][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = cp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t batches = 3;  // not a multiple of dp = 2: one replica evaluates fewer
  std::vector<CpLayout> layouts = layouts_for(w.size());
  if (w.size() == 4) layouts.push_back({1, 2, CpSharding::zigzag, CpAttention::ring, 2});  // CP 2 × TP 2
  for (const CpLayout& layout : layouts) {
    INFO(layout.label() << ", rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp);
    const double base_val = testing::single_rank_validation(cfg, base.params, *data, batches);
    const Variant variant{layout, 1, ""};
    const std::int64_t tokens = layout.dp * cfg.tokens_per_micro_batch();
    VariantRunner plain(*metrics, {.config = cfg, .tokens_per_step = tokens, .progress = {.quiet = true}});
    const VariantResult without = run_variant(plain, w, cfg, *data, variant);
    VariantRunner evaluating(*metrics, {.config = cfg, .tokens_per_step = tokens,
                                        .progress = {.eval_every = 2, .eval_batches = batches, .quiet = true}});
    const VariantResult with = run_variant(evaluating, w, cfg, *data, variant, batches);
    REQUIRE(with.val_steps == std::vector<std::int64_t>{1, 2});  // every 2nd step, and the last of 3
    REQUIRE(with.val_losses.size() == 2);
    CHECK(without.val_steps.empty());
    // The last evaluation, of the final parameters: the cp ranks' means over their tokens averaged
    // in double, the attention's sums over keys in another order (as the first training loss
    // above: bounded by 1e-6 relative). With tp 2 a rank holds a shard: against the baseline's
    // parameters, which the losses follow to 1e-6 relative (the tests above).
    if (layout.tp == 1) {
      const double single = testing::single_rank_validation(cfg, with.parameters, *data, batches);
      CHECK(std::fabs(with.val_losses.back() - single) <= 1e-6 * single);
    }
    CHECK(std::fabs(with.val_losses.back() - base_val) <= 1e-6 * base_val);
    CHECK(with.val_losses.front() != with.val_losses.back());
    // The evaluations change nothing the layout measures: the same losses (bits), the bytes this
    // rank sent on its cp and dp·cp groups, its resident state and peaks, its attention's work.
    CHECK(with.losses == without.losses);
    CHECK(with.cp_comm.total_sent() == without.cp_comm.total_sent());
    CHECK(with.cp_comm.calls == without.cp_comm.calls);
    CHECK(with.dp_cp_comm.total_sent() == without.dp_cp_comm.total_sent());
    CHECK(with.memory.resident.bytes == without.memory.resident.bytes);
    // The peaks, but for the K/V blocks in flight (CommBuffer): how many the ring holds at once
    // depends on when the progress thread lets a received block go, so that peak varies from run
    // to run (measured: 6144 to 8192 bytes on 2 ranks), with or without evaluations.
    for (int c = 0; c < kNumMemCategories; ++c)
      if (static_cast<MemCategory>(c) != MemCategory::CommBuffer) CHECK(with.memory.peak.bytes[c] == without.memory.peak.bytes[c]);
    CHECK(with.blocks_per_step == without.blocks_per_step);
  }
}

TEST_CASE("CP × TP on one mesh: every attention and layout with tp 2 trains like the single-rank baseline",
          "[ch07][mpi]") {
  Communicator& w = world();
  if (w.size() != 4) return;  // cp 2 × tp 2
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = cp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const testing::Run base = testing::baseline(cfg, *data, 1);
  for (CpAttention a : kAttentions)
    for (CpSharding s : kShardings) {
      const CpLayout layout{1, 2, s, a, 2};
      INFO(layout.label() << ", rank " << w.rank());
      CpTrainer trainer(w, cfg, layout);
      std::vector<double> losses;
      std::vector<float> grad0;
      for (std::int64_t step = 0; step < cfg.steps; ++step) {
        losses.push_back(testing::mean_over_ranks(*metrics, trainer.step(rank_micro_batches(*data, step, 0, 1, cfg.mbs, cfg.seq))));
        if (step == 0) grad0 = trainer.params().flat_grad().to_floats();
      }
      // This rank's shard of the baseline's flat vectors (chapter 06's layout: element j of a
      // parameter is element full_index(j) of the unsharded one).
      auto shard_of = [&](const std::vector<float>& full) {
        const std::vector<ParamInfo> whole = llama_param_layout(cfg.model);
        std::vector<float> out;
        for (std::size_t i = 0; i < trainer.params().infos().size(); ++i) {
          const ParamInfo& p = trainer.params().infos()[i];
          for (std::int64_t j = 0; j < p.numel; ++j)
            out.push_back(full[static_cast<std::size_t>(whole[i].offset + p.full_index(j))]);
        }
        return out;
      };
      // The bounds of the fp32 test above (TP's row blocks add one more partial sum per layer:
      // the same few ulps).
      CHECK(std::fabs(losses[0] - base.losses[0]) <= 1e-6 * base.losses[0]);
      check_grad_near_baseline(grad0, shard_of(base.grad0), w.rank());
      check_losses_near_baseline(losses, base.losses);
      check_params_near_baseline(trainer.params().flat().to_floats(), shard_of(base.params), cfg.adamw.lr, w.rank());
    }
}

// ---- the work of each rank's attention, as the run recorded it -------------------------------------

TEST_CASE("zig-zag gives every rank the same attention work; contiguous gives rank r r + 1 blocks", "[ch07][mpi]") {
  Communicator& w = world();
  const int W = w.size();
  const TrainingConfig cfg = cp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  // The variants that compute the mask block by block, one query chunk against one key chunk.
  for (CpAttention a : {CpAttention::ring, CpAttention::all_gather})
    for (CpSharding s : kShardings) {
      const CpLayout layout{1, W, s, a};
      INFO(layout.label() << ", rank " << w.rank());
      CpTrainer trainer(w, cfg, layout);
      trainer.step(rank_micro_batches(*data, 0, 0, 1, cfg.mbs, cfg.seq));
      const AttentionWork& work = trainer.attention().work();
      CHECK(work.compute_seconds > 0);
      const std::vector<std::int64_t> per_rank = report::gather_rows(trainer.cp(), std::int64_t{work.blocks()});
      INFO("blocks per rank: " << Catch::Detail::stringify(per_rank));
      if (s == CpSharding::contiguous) {
        // Rank r's queries see its own chunk (the diagonal) and the r chunks before it.
        for (int r = 0; r < W; ++r) CHECK(per_rank[static_cast<std::size_t>(r)] == r + 1);
      } else {
        // Chunks r and 2W-1-r: r + 1 and 2W - r blocks, 2W + 1 whatever r is.
        const auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
        CHECK(*lo == *hi);
        CHECK(*hi == 2 * W + 1);
      }
      // The whole mask is covered once: every visible (query chunk, key chunk) pair, over the
      // ranks, is computed by exactly one rank.
      std::int64_t total = 0;
      for (std::int64_t b : per_rank) total += b;
      const std::int64_t chunks = chunk_count(s, W);
      CHECK(total == chunks * (chunks + 1) / 2);
    }
}

// ---- memory: the all-gather holds the whole sequence's K and V ----------------------------------------

namespace {

// Deterministic values in [-1, 1) (keyed by name and index), as a tensor.
Tensor random_tensor(const Shape& shape, const std::string& name) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 2.0f * rng::uniform(11, name, i) - 1.0f;
  return Tensor::from_floats(v, shape);
}

}  // namespace

TEST_CASE("K/V held while attending: the all-gather the whole sequence's (2·W blocks), the ring a few blocks "
          "whatever W", "[ch07][mpi]") {
  Communicator& w = world();
  const std::int64_t W = w.size(), B = 2, T = 8, H = 4, G = 2, D = 4;  // T tokens per rank
  const Tensor q = random_tensor({B, T, H, D}, "q"), k = random_tensor({B, T, G, D}, "k");
  const Tensor v = random_tensor({B, T, G, D}, "v");
  const std::int64_t block = B * T * G * D * 4;  // one rank's k (or v), f32
  for (CpSharding s : kShardings) {
    INFO(sharding_name(s) << ", rank " << w.rank());
    auto gather = make_cp_attention(CpAttention::all_gather, w, s, H, G);
    auto ring = make_cp_attention(CpAttention::ring, w, s, H, G);
    // The all-gather holds K and V of every rank, [B, W·T, G, D] each (CommBuffer), and computes
    // its one block with [T, W·T] f32 scores (ops::attention_block_forward's scratch, Temporary).
    const std::int64_t gathered = attention_forward_peak(*gather, q, k, v, MemCategory::CommBuffer);
    CHECK(gathered == 2 * W * block);
    CHECK(attention_forward_peak(*gather, q, k, v) == T * W * T * 4);
    // The ring holds its own k and v (no copy), receives the next rank's block (k and v) while it
    // computes, and forwards the one it holds. With W = 2 there is one transfer: exactly the one
    // block received. With more ranks a block whose send has completed can still be held for a
    // moment by the communicator's progress thread (it lets go of its buffers just after the op
    // completes), so the peak is between the block received and three blocks (received, being
    // sent, just sent) — a bound that does not grow with W.
    const std::int64_t in_flight = attention_forward_peak(*ring, q, k, v, MemCategory::CommBuffer);
    if (W == 1) CHECK(in_flight == 0);
    else if (W == 2) CHECK(in_flight == 2 * block);
    else CHECK((in_flight >= 2 * block && in_flight <= 6 * block));
    // What the all-gather holds beyond the ring: the other ranks' K/V less the ring's few blocks.
    INFO("all-gather " << gathered << " B, ring " << in_flight << " B");
    if (W >= 4) CHECK(gathered - in_flight >= 2 * (W - 3) * block);
  }
}

// ---- communication: the bytes each variant sends per step ---------------------------------------------

TEST_CASE("each CP attention sends per step what its count says", "[ch07][mpi]") {
  Communicator& w = world();
  const TrainingConfig cfg = cp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t k = 2;  // micro-batches per replica
  const std::uint64_t e = 4;  // fp32 activations and gradients
  const std::uint64_t L = static_cast<std::uint64_t>(cfg.model.layers), B = static_cast<std::uint64_t>(cfg.mbs);
  const std::uint64_t D = static_cast<std::uint64_t>(cfg.model.head_dim());
  const std::uint64_t H = static_cast<std::uint64_t>(cfg.model.heads);
  const std::uint64_t G = static_cast<std::uint64_t>(cfg.model.kv_heads);
  for (const CpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << ", rank " << w.rank());
    CpTrainer trainer(w, cfg, layout);
    trainer.cp().reset_stats();
    trainer.dp_cp().reset_stats();
    trainer.step(rank_micro_batches(*data, 0, trainer.dp().rank(), k, cfg.mbs, cfg.seq));
    const CommStats& s = trainer.cp().stats();
    const int W = layout.cp, r = trainer.cp().rank();
    const std::uint64_t T = static_cast<std::uint64_t>(cfg.seq / W);  // tokens per rank
    const std::uint64_t n = k * L;  // attention calls per step, each way
    const std::uint64_t kv = B * T * G * D * e;  // one rank's k (or v) of a micro-batch, bytes
    auto sent = [&](CommOp op, std::uint64_t payload) { return comm_volume(op, payload, W, r).bytes_sent; };
    switch (layout.attention) {
      case CpAttention::all_gather:
        // Per layer and micro-batch, one collective per sequence (B): forward k and v gathered;
        // backward gathered again, and dK, dV (f32) reduce-scattered. Each moves W·T·G·D of a
        // sequence; a rank sends (W-1)/W of it.
        CHECK(s.count(CommOp::all_gather) == n * 2 * 2 * B);
        CHECK(s.sent(CommOp::all_gather) == n * 2 * 2 * B * sent(CommOp::all_gather, W * kv / B));
        CHECK(s.count(CommOp::reduce_scatter) == n * 2 * B);
        CHECK(s.sent(CommOp::reduce_scatter) == n * 2 * B * sent(CommOp::reduce_scatter, W * kv / B));
        CHECK(s.total_sent() == s.sent(CommOp::all_gather) + s.sent(CommOp::reduce_scatter));
        break;
      case CpAttention::ring:
        // Forward: W - 1 hops of this rank's K and V block; backward: W - 1 hops of K and V
        // again, and W hops of dK, dV (f32), the last one bringing them home (none at W = 1).
        CHECK(s.sent(CommOp::send) == n * (2 * (W - 1) * kv + 2 * (W - 1) * kv + (W > 1 ? 2 * W * kv : 0)));
        CHECK(s.total_sent() == s.sent(CommOp::send));
        break;
      case CpAttention::all_to_all: {
        // Forward: q, k and v to the head split, the output back; backward: the output's
        // gradient, the output, q, k and v to the head split again (nothing is kept), dq, dk and
        // dv back: 3 × (q, k, v) + 3 × out. A rank sends (W-1)/W of each.
        const std::uint64_t qkv = B * T * (H + 2 * G) * D * e, o = B * T * H * D * e;
        CHECK(s.count(CommOp::all_to_all) == n * 12);
        CHECK(s.sent(CommOp::all_to_all) == n * 3 * (sent(CommOp::all_to_all, qkv) + sent(CommOp::all_to_all, o)));
        CHECK(s.total_sent() == s.sent(CommOp::all_to_all));
        break;
      }
    }
    // Data and context parallelism: one all-reduce of the whole gradient over the dp·cp ranks.
    const CommStats& d = trainer.dp_cp().stats();
    CHECK(d.count(CommOp::all_reduce) == (layout.world() > 1 ? 1u : 0u));
    if (layout.world() > 1)
      CHECK(d.payload_bytes[static_cast<int>(CommOp::all_reduce)] ==
            static_cast<std::uint64_t>(trainer.params().numel()) * e);
  }
}

// ---- bad layouts ---------------------------------------------------------------------------------------

TEST_CASE("check_cp_layout refuses what cannot run, with one message", "[ch07]") {
  const ModelConfig m = cp_training().model;  // 8 heads, 4 kv heads
  CHECK_NOTHROW(check_cp_layout({1, 4, CpSharding::zigzag, CpAttention::ring}, 4, m, 16));
  CHECK_THROWS_WITH(check_cp_layout({1, 4, CpSharding::zigzag, CpAttention::ring}, 4, m, 12),
                    Catch::Contains("seq 12 is not divisible by 2·cp = 8"));
  CHECK_NOTHROW(check_cp_layout({1, 4, CpSharding::contiguous, CpAttention::ring}, 4, m, 12));
  CHECK_THROWS_WITH(check_cp_layout({1, 4, CpSharding::contiguous, CpAttention::all_gather}, 4, m, 10),
                    Catch::Contains("seq 10 is not divisible by cp = 4"));
  CHECK_THROWS_WITH(check_cp_layout({2, 2, CpSharding::zigzag, CpAttention::ring}, 3, m, 16),
                    Catch::Contains("the mesh dp 2 × cp 2 = 4 ranks does not match the 3 ranks of this run"));
  CHECK_THROWS_WITH(check_cp_layout({0, 2, CpSharding::zigzag, CpAttention::ring}, 0, m, 16),
                    Catch::Contains("--dp, --cp and --tp must be >= 1"));
  ModelConfig six = m;
  six.heads = 6;
  six.kv_heads = 3;
  six.hidden = 48;
  CHECK_NOTHROW(check_cp_layout({1, 4, CpSharding::zigzag, CpAttention::ring}, 4, six, 16));
  CHECK_THROWS_WITH(check_cp_layout({1, 4, CpSharding::zigzag, CpAttention::all_to_all}, 4, six, 16),
                    Catch::Contains("cp must divide the number of heads (6) and of kv heads (3)"));
  CHECK_THROWS_WITH(check_cp_layout({1, 2, CpSharding::zigzag, CpAttention::all_to_all}, 2, six, 16),
                    Catch::Contains("cp must divide the number of heads (6) and of kv heads (3)"));
  // The trainer checks before it builds anything (no collective: every rank throws alike).
  const TrainingConfig cfg = cp_training();
  CHECK_THROWS_WITH(CpTrainer(world(), cfg, {1, 3 * world().size(), CpSharding::zigzag, CpAttention::ring}),
                    Catch::Contains("does not match the"));
}

TEST_CASE("tokens_at takes a rank's tokens of every sequence at its positions", "[ch07]") {
  Batch b{Tensor::empty({2, 8}, DType::i32), Tensor::empty({2, 8}, DType::i32)};
  for (std::int32_t i = 0; i < 16; ++i) {
    b.inputs.data<std::int32_t>()[i] = i;
    b.targets.data<std::int32_t>()[i] = 100 + i;
  }
  const Batch mine = tokens_at(b, {1, 2, 5, 6});  // zig-zag rank 1 of 2: chunks 1 and 2
  REQUIRE(mine.inputs.shape() == Shape{2, 4});
  std::vector<std::int32_t> in(mine.inputs.data<std::int32_t>(), mine.inputs.data<std::int32_t>() + 8);
  std::vector<std::int32_t> tg(mine.targets.data<std::int32_t>(), mine.targets.data<std::int32_t>() + 8);
  CHECK(in == std::vector<std::int32_t>{1, 2, 5, 6, 9, 10, 13, 14});
  CHECK(tg == std::vector<std::int32_t>{101, 102, 105, 106, 109, 110, 113, 114});
}

TEST_CASE("the attention's compute_seconds is its forward's: a backward adds nothing (the report compares the "
          "attentions' forwards)", "[ch07][mpi]") {
  Communicator& w = world();
  const std::int64_t B = 1, T = 8, H = 4, G = 4, D = 4;  // T tokens per rank; cp <= 4 splits the heads
  const Tensor q = random_tensor({B, T, H, D}, "q"), k = random_tensor({B, T, G, D}, "k");
  const Tensor v = random_tensor({B, T, G, D}, "v"), dout = random_tensor({B, T, H, D}, "dout");
  for (CpAttention a : kAttentions) {
    INFO(attention_name(a) << ", rank " << w.rank());
    auto attention = make_cp_attention(a, w, CpSharding::zigzag, H, G);
    Tensor out = Tensor::empty(q.shape(), q.dtype(), MemCategory::Temporary), saved;
    attention->attention_forward(q, k, v, out, saved);
    const double forward = attention->work().compute_seconds;
    CHECK(forward > 0);
    Tensor dq = Tensor::zeros(q.shape(), DType::f32, MemCategory::Temporary);
    Tensor dk = Tensor::zeros(k.shape(), DType::f32, MemCategory::Temporary);
    Tensor dv = Tensor::zeros(v.shape(), DType::f32, MemCategory::Temporary);
    attention->attention_backward(dout, q, k, v, out, saved, dq, dk, dv);
    CHECK(attention->work().compute_seconds == forward);
  }
}
