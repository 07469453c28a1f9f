// Chapter 06: tensor and sequence parallelism. The shard layout (every element of every weight
// in exactly one shard, initialised as the unsharded tensor's slice); the column- and row-
// parallel blocks (exercise 06.1) and the vocabulary-parallel cross-entropy (exercise 06.2)
// against the single-device ops on the whole tensors; training under TP, TP+SP and DP × TP
// against the single-rank baseline; each layer's saved activations against the course's
// formula divided as TP and SP divide it; the bytes each collective moves per step against the
// operator count; the whole logits never held by one rank. The [mpi] cases run on 1, 2 and 4
// ranks, with t = the world size (and dp 2 × tp 2 on 4). [gpu]: the loss's device version against
// the exercise, and every layout with a GPU per rank over the device communicator (NCCL, or host
// staging when ranks share a GPU) against the CPU baseline.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "chapters/06_tensor_parallel/parallel_linear.hpp"
#include "chapters/06_tensor_parallel/tp_gather.hpp"
#include "chapters/06_tensor_parallel/tp_run.hpp"
#include "chapters/06_tensor_parallel/tp_trainer.hpp"
#include "chapters/06_tensor_parallel/vocab_parallel_loss.hpp"
#include "chapters/06_tensor_parallel/vocab_parallel_loss_cuda.hpp"
#include "common/calc/memory_model.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/device.hpp"
#include "common/memory_tracker.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "tests/support/baseline_bounds.hpp"
#include "tests/support/baseline_run.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/gpu_ranks.hpp"
#include "tests/support/single_rank_validation.hpp"
#include "tests/ch06_tensor_parallel/tp_fixtures.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch06;
using namespace usp::testing;

namespace {

// Deterministic values in [-1, 1) (keyed by name and index), as a tensor.
Tensor random_tensor(const Shape& shape, const std::string& name, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 2.0f * rng::uniform(7, name, i) - 1.0f;
  return Tensor::from_floats(v, shape, dtype);
}

// Rows [begin, begin + count) of a [rows, cols] tensor, or columns when by_columns.
std::vector<float> block(const Tensor& t, std::int64_t begin, std::int64_t count, bool by_columns) {
  const std::vector<float> all = t.to_floats();
  const std::int64_t rows = t.dim(0), cols = t.dim(1);
  std::vector<float> out;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const bool in = by_columns ? (c >= begin && c < begin + count) : (r >= begin && r < begin + count);
      if (in) out.push_back(all[static_cast<std::size_t>(r * cols + c)]);
    }
  return out;
}

Tensor as_tensor(const std::vector<float>& v, const Shape& shape) { return Tensor::from_floats(v, shape); }

}  // namespace

// ---- the shard layout ---------------------------------------------------------------------------

TEST_CASE("TP shards: every element of every weight in exactly one shard, initialised as its slice", "[ch06]") {
  const ModelConfig c = tp_model();
  ParamStore whole(c);
  whole.init(5);
  const std::vector<ParamInfo> full = llama_param_layout(c);
  for (std::int64_t t : {1, 2, 4}) {
    std::vector<std::vector<int>> hits(full.size());
    for (std::size_t i = 0; i < full.size(); ++i) hits[i].assign(static_cast<std::size_t>(full[i].numel), 0);
    for (std::int64_t r = 0; r < t; ++r) {
      INFO("t = " << t << ", shard " << r);
      ParamStore shard(c, DType::f32, Device::cpu(), StoreLayout{.tp = {t, r}});
      shard.init(5);
      const std::vector<float> all = whole.flat().to_floats(), mine = shard.flat().to_floats();
      for (std::size_t i = 0; i < full.size(); ++i) {
        const ParamInfo& p = shard.infos()[i];
        CHECK(p.full_shape == full[i].shape);
        if (p.split_dim < 0) CHECK(p.shape == full[i].shape);
        if (p.split_dim >= 0)
          CHECK(p.shape[static_cast<std::size_t>(p.split_dim)] * t ==
                full[i].shape[static_cast<std::size_t>(p.split_dim)]);
        std::vector<float> want(static_cast<std::size_t>(p.numel));
        for (std::int64_t j = 0; j < p.numel; ++j) {
          const std::int64_t g = p.full_index(j);
          want[static_cast<std::size_t>(j)] = all[static_cast<std::size_t>(full[i].offset + g)];
          ++hits[i][static_cast<std::size_t>(g)];
        }
        const std::vector<float> got(mine.begin() + p.offset, mine.begin() + p.offset + p.numel);
        INFO(p.name);
        CHECK(elementwise_mismatch(got, want) == "");  // the same counter-based values, bit for bit
      }
      // Resharding: the slice cut from the whole model is the shard initialised by itself.
      ParamStore cut(c, DType::f32, Device::cpu(), StoreLayout{.tp = {t, r}});
      load_shard(whole, cut);
      CHECK(elementwise_mismatch(cut.flat().to_floats(), mine) == "");
    }
    for (std::size_t i = 0; i < full.size(); ++i) {
      INFO("t = " << t << ", " << full[i].name);
      const bool replicated = full[i].is_norm;
      const int want = replicated ? static_cast<int>(t) : 1;
      CHECK(std::all_of(hits[i].begin(), hits[i].end(), [&](int h) { return h == want; }));
    }
  }
}

TEST_CASE("TP shards: t must divide the heads, kv heads, ffn and vocabulary", "[ch06]") {
  const ModelConfig c = tp_model();
  CHECK_THROWS_WITH(llama_param_layout(c, {3, 0}), Catch::Contains("must divide the number of heads (8)"));
  ModelConfig kv = c;
  kv.kv_heads = 2;
  CHECK_THROWS_WITH(llama_param_layout(kv, {4, 0}), Catch::Contains("must divide the number of kv heads"));
  ModelConfig f = c;
  f.ffn = 50;
  CHECK_THROWS_WITH(llama_param_layout(f, {4, 0}), Catch::Contains("must divide the ffn size (50)"));
  ModelConfig v = c;
  v.vocab = 258;
  CHECK_THROWS_WITH(llama_param_layout(v, {4, 0}), Catch::Contains("must divide the vocabulary size"));
  CHECK_NOTHROW(llama_param_layout(v, {2, 1}));
}

// ---- exercise 06.1: the blocks against the single-device matmul --------------------------------

TEST_CASE("column and row blocks (exercise 06.1) equal the single-device matmuls, with and without SP",
          "[ch06][mpi]") {
  Communicator& comm = world();
  const int t = comm.size(), r = comm.rank();
  // N tokens, C stream width, two column weights of out/t rows each, a row weight of in/t columns.
  const std::int64_t N = 8, C = 12, out0 = 8, out1 = 4, in = 8;
  const Tensor x = random_tensor({N, C}, "x"), w0 = random_tensor({out0, C}, "w0"), w1 = random_tensor({out1, C}, "w1");
  const Tensor dy0 = random_tensor({N, out0}, "dy0"), dy1 = random_tensor({N, out1}, "dy1");
  const Tensor xr = random_tensor({N, in}, "xr"), wr = random_tensor({C, in}, "wr"), dyr = random_tensor({N, C}, "dyr");
  // The single-device results on whole tensors.
  Tensor y0 = Tensor::empty({N, out0}), y1 = Tensor::empty({N, out1}), dx = Tensor::empty({N, C});
  Tensor dw0 = Tensor::zeros({out0, C}), dw1 = Tensor::zeros({out1, C});
  ops::matmul_forward(x, w0, y0);
  ops::matmul_forward(x, w1, y1);
  ops::matmul_backward(dy1, x, w1, dx, dw1);
  ops::matmul_backward(dy0, x, w0, dx, dw0, /*accumulate_dx=*/true);
  Tensor yr = Tensor::empty({N, C}), dxr = Tensor::empty({N, in}), dwr = Tensor::zeros({C, in});
  ops::matmul_forward(xr, wr, yr);
  ops::matmul_backward(dyr, xr, wr, dxr, dwr);

  // Sums of t products of values in [-1, 1): reassociated, a few ulps of the sum's magnitude
  // (≤ C = 12 terms, so |y| ≤ 12): 1e-5 absolute is ~20 ulps of 12; exact at t = 1.
  const Tolerance tol = t == 1 ? Tolerance::exact() : Tolerance::absolute(1e-5);
  for (bool sp : {false, true}) {
    if (sp && t == 1) continue;
    INFO("t = " << t << (sp ? " with SP" : " without SP"));
    TpGroup group{comm, sp};
    const std::int64_t n = sp ? N / t : N, row0 = sp ? r * n : 0;  // my stream rows
    const Tensor x_mine = as_tensor(block(x, row0, n, false), {n, C});
    const Tensor w0_mine = as_tensor(block(w0, r * out0 / t, out0 / t, false), {out0 / t, C});
    const Tensor w1_mine = as_tensor(block(w1, r * out1 / t, out1 / t, false), {out1 / t, C});
    // Column block forward: my output columns of y0, y1, on all N rows.
    std::vector<Tensor> y = {Tensor::empty({N, out0 / t}), Tensor::empty({N, out1 / t})};
    column_parallel_forward(group, x_mine, {w0_mine, w1_mine}, y);
    CHECK(elementwise_mismatch(y[0].to_floats(), block(y0, r * out0 / t, out0 / t, true), tol, r) == "");
    CHECK(elementwise_mismatch(y[1].to_floats(), block(y1, r * out1 / t, out1 / t, true), tol, r) == "");
    // Column block backward: my rows of dw, my stream rows of dx (the sum over every rank's term).
    std::vector<Tensor> dw = {Tensor::zeros({out0 / t, C}), Tensor::zeros({out1 / t, C})};
    Tensor dx_mine = Tensor::empty({n, C});
    column_parallel_backward(group,
                             {as_tensor(block(dy0, r * out0 / t, out0 / t, true), {N, out0 / t}),
                              as_tensor(block(dy1, r * out1 / t, out1 / t, true), {N, out1 / t})},
                             x_mine, {w0_mine, w1_mine}, dw, dx_mine);
    CHECK(elementwise_mismatch(dw[0].to_floats(), block(dw0, r * out0 / t, out0 / t, false), tol, r) == "");
    CHECK(elementwise_mismatch(dw[1].to_floats(), block(dw1, r * out1 / t, out1 / t, false), tol, r) == "");
    CHECK(elementwise_mismatch(dx_mine.to_floats(), block(dx, row0, n, false), tol, r) == "");
    // Row block: my input features in, the whole sum out on my stream rows.
    const Tensor xr_mine = as_tensor(block(xr, r * in / t, in / t, true), {N, in / t});
    const Tensor wr_mine = as_tensor(block(wr, r * in / t, in / t, true), {C, in / t});
    Tensor yr_mine = Tensor::empty({n, C});
    row_parallel_forward(group, xr_mine, wr_mine, yr_mine);
    CHECK(elementwise_mismatch(yr_mine.to_floats(), block(yr, row0, n, false), tol, r) == "");
    Tensor dxr_mine = Tensor::empty({N, in / t}), dwr_mine = Tensor::zeros({C, in / t});
    row_parallel_backward(group, as_tensor(block(dyr, row0, n, false), {n, C}), xr_mine, wr_mine, dxr_mine, dwr_mine);
    CHECK(elementwise_mismatch(dxr_mine.to_floats(), block(dxr, r * in / t, in / t, true), tol, r) == "");
    CHECK(elementwise_mismatch(dwr_mine.to_floats(), block(dwr, r * in / t, in / t, true), tol, r) == "");
  }
}

// ---- exercise 06.2: the vocabulary-parallel loss ------------------------------------------------

TEST_CASE("vocabulary-parallel cross-entropy (exercise 06.2) equals the single-device loss and gradient",
          "[ch06][mpi]") {
  Communicator& comm = world();
  const int t = comm.size(), r = comm.rank();
  const std::int64_t N = 6, V = 40, Vr = V / t;
  // Logits spread over [-8, 8): the max subtraction matters; targets on every rank's columns.
  Tensor logits = random_tensor({N, V}, "logits");
  ops::scale_inplace(logits, 8.0f);
  Tensor targets = Tensor::empty({N}, DType::i32);
  for (std::int64_t n = 0; n < N; ++n) targets.data<std::int32_t>()[n] = static_cast<std::int32_t>((n * 7 + 3) % V);
  const double want = ops::cross_entropy_forward(logits, targets);
  Tensor dwant = Tensor::empty({N, V});
  ops::cross_entropy_backward(logits, targets, dwant, 0.5f);

  const Tensor mine = as_tensor(block(logits, r * Vr, Vr, true), {N, Vr});
  Tensor lse;
  const double got = vocab_parallel_cross_entropy(comm, mine, targets, r * Vr, lse);
  INFO("rank " << r << " of t = " << t << ": loss " << got << ", expected " << want);
  // The loss is a mean of lse - z over 6 rows of ~|8|: exp and log in another precision (the op's
  // fp32 polynomial, the exercise's libm) and another summation order differ by a few fp32 ulps
  // (6e-8 relative each). Measured ≤ 5e-9 relative; bounded by 1e-6 (16 ulps).
  CHECK(std::fabs(got - want) <= 1e-6 * std::fabs(want));
  {
    INFO("exercise 06.2: vocab_parallel_cross_entropy must allocate lse ([N] f32), rank " << r);
    REQUIRE(lse.defined());
  }
  CHECK(lse.numel() == N);
  Tensor dmine = Tensor::empty({N, Vr});
  vocab_parallel_cross_entropy_backward(mine, targets, r * Vr, lse, dmine, 0.5f);
  // Probabilities (≤ 1) scaled by 0.5/N ≈ 0.08: measured ≤ 1.2e-8 (1.5 ulps of 0.08); bounded by
  // 1e-7 (about 13 ulps).
  CHECK(elementwise_mismatch(dmine.to_floats(), block(dwant, r * Vr, Vr, true), Tolerance::absolute(1e-7), r) == "");
  // A target outside the vocabulary is refused on every rank, before any communication.
  targets.data<std::int32_t>()[2] = static_cast<std::int32_t>(V);
  CHECK_THROWS_WITH(vocab_parallel_cross_entropy(comm, mine, targets, r * Vr, lse),
                    Catch::Contains("target 40 at row 2 is outside the vocabulary [0, 40)"));
}

// ---- training = the single-rank baseline --------------------------------------------------------

namespace {

testing::Run tp_run(Communicator& w, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data,
                    TpLayout layout, std::int64_t k) {
  TpTrainer trainer(w, cfg, layout);
  testing::Run run;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const double local = trainer.step(rank_micro_batches(data, step, trainer.dp().rank(), k, cfg.mbs, cfg.seq));
    run.losses.push_back(testing::mean_over_ranks(metrics, local));  // tp peers agree: the dp mean
    if (step == 0) run.grad0 = trainer.full_gradients();
  }
  run.params = trainer.full_parameters();
  return run;
}

}  // namespace

TEST_CASE("TP, TP+SP and DP × TP train like the single-rank baseline", "[ch06][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = tp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  for (const TpLayout& layout : layouts_for(w.size())) {
    for (std::int64_t k : {1, 2}) {
      INFO(layout.label() << ", " << k << " micro-batch(es) per replica, rank " << w.rank());
      const testing::Run base = testing::baseline(cfg, *data, layout.dp * k);
      const testing::Run got = tp_run(w, *metrics, cfg, *data, layout, k);
      // The first loss: the same model on the same tokens; the row blocks' sums are split in t
      // partial sums (fp32 reassociation), and the loss's exp/log run in double instead of the
      // op's fp32 polynomial: a few fp32 ulps (6e-8 relative each). Measured ≤ 3e-9 relative;
      // bounded by 1e-6 (16 ulps).
      CHECK(std::fabs(got.losses[0] - base.losses[0]) <= 1e-6 * base.losses[0]);
      // The first gradient, gathered: fp32 reassociation in the blocks and in the all-reduces of
      // t (and dp) partial sums: a few ulps of the largest terms. Measured ≤ 4e-7 of the largest
      // element, bounded by 2e-6 of it. A missing all-reduce, a shard in the wrong place or a lost
      // micro-batch is an O(1) error.
      check_grad_near_baseline(got.grad0, base.grad0, w.rank());
      // Losses and parameters after 3 AdamW steps: the differences above, moved through Adam's
      // normalised update (≤ lr = 3e-3 per element and step). Where a gradient is within rounding
      // of zero its sign, and so its update, is arbitrary: no useful bound follows from the
      // gradient's (measured |Δw| ≤ 1.1e-5). lr/30 = 1e-4 is a thirtieth of one update, so a
      // weight that missed an update, got a wrong one or another rank's shard fails.
      check_losses_near_baseline(got.losses, base.losses);
      check_params_near_baseline(got.params, base.params, cfg.adamw.lr, w.rank());
    }
  }
}

// ---- --eval-every: the held-out loss in the layout (tp_run.hpp's validation hook) ----------------

TEST_CASE("--eval-every: each layout's held-out loss is the single-rank one of its parameters, off its books",
          "[ch06][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  const TrainingConfig cfg = tp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t batches = 3;  // not a multiple of dp = 2: one replica evaluates fewer
  for (const TpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << ", rank " << w.rank());
    const Variant variant{layout, 1, ""};
    const std::int64_t tokens = layout.dp * cfg.tokens_per_micro_batch();
    VariantRunner plain(*metrics, {.config = cfg, .tokens_per_step = tokens, .progress = {.quiet = true}});
    const VariantResult without = run_variant(plain, w, cfg, *data, variant);
    VariantRunner evaluating(*metrics, {.config = cfg, .tokens_per_step = tokens,
                                        .progress = {.eval_every = 2, .eval_batches = batches, .quiet = true}});
    const VariantResult with = run_variant(evaluating, w, cfg, *data, variant, {}, batches);
    REQUIRE(with.val_steps == std::vector<std::int64_t>{1, 2});  // every 2nd step, and the last of 3
    REQUIRE(with.val_losses.size() == 2);
    CHECK(without.val_steps.empty());
    // The last evaluation is of the final parameters, through the split model: the row blocks'
    // t partial sums and the vocabulary-parallel loss reassociate fp32 sums, as in the first
    // training loss (the test above: bounded by 1e-6 relative).
    const double single = testing::single_rank_validation(cfg, with.parameters, *data, batches);
    CHECK(std::fabs(with.val_losses.back() - single) <= 1e-6 * single);
    CHECK(with.val_losses.front() != with.val_losses.back());
    // The evaluations change nothing the layout measures: the same losses (bits), the bytes this
    // rank sent on its tp and dp groups, its resident state and its peaks.
    CHECK(with.losses == without.losses);
    CHECK(with.tp_comm.total_sent() == without.tp_comm.total_sent());
    CHECK(with.tp_comm.calls == without.tp_comm.calls);
    CHECK(with.dp_comm.total_sent() == without.dp_comm.total_sent());
    CHECK(with.memory.resident.bytes == without.memory.resident.bytes);
    CHECK(with.memory.peak.bytes == without.memory.peak.bytes);
  }
}

// ---- communication: the operator count -----------------------------------------------------------

TEST_CASE("a rank keeps exactly its shard, and sends per step the operator count (TP: all-reduces; SP: gathers and scatters)",
          "[ch06][mpi]") {
  Communicator& w = world();
  const TrainingConfig cfg = tp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t L = cfg.model.layers, N = cfg.mbs * cfg.seq, C = cfg.model.hidden, k = 2;
  const std::uint64_t e = 4;  // fp32 activations and gradients
  const std::uint64_t stream = static_cast<std::uint64_t>(N * C) * e, per_row = static_cast<std::uint64_t>(N) * e;
  for (const TpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << ", rank " << w.rank());
    const MemCounts before = MemoryTracker::instance().current();
    TpTrainer trainer(w, cfg, layout);
    // The state a rank keeps is exactly its shard's: Ψ/t parameters plus the replicated norms
    // (counted in full below), in fp32: 4 bytes each of parameters and gradients, 8 of Adam state.
    const MemCounts after = MemoryTracker::instance().current();
    const std::int64_t shard = (cfg.model.num_parameters() + (layout.tp - 1) * (2 * L + 1) * C) / layout.tp;
    CHECK(trainer.params().numel() == shard);
    CHECK(after[MemCategory::Parameter] - before[MemCategory::Parameter] == 4 * shard);
    CHECK(after[MemCategory::Gradient] - before[MemCategory::Gradient] == 4 * shard);
    CHECK(after[MemCategory::OptimizerState] - before[MemCategory::OptimizerState] == 8 * shard);
    trainer.tp().reset_stats();
    trainer.dp().reset_stats();
    trainer.step(rank_micro_batches(*data, 0, trainer.dp().rank(), k, cfg.mbs, cfg.seq));
    const CommStats& s = trainer.tp().stats();
    const int t = layout.tp;
    // What one op of `payload` bytes sends from this rank (comm_volume.hpp: ring algorithms).
    auto sent = [&](CommOp op, std::uint64_t calls, std::uint64_t payload) {
      return calls * comm_volume(op, payload, t, trainer.tp().rank()).bytes_sent;
    };
    // The loss's three reductions over N numbers, per micro-batch (exercise 06.2).
    const std::uint64_t loss_calls = 3 * k, loss_sent = sent(CommOp::all_reduce, 3 * k, per_row);
    if (!layout.sp) {
      // Per micro-batch: forward, the embedding's g and each layer's two row blocks' g; backward,
      // each layer's two column blocks' f and the head's f. All of N·C elements.
      const std::uint64_t calls = static_cast<std::uint64_t>(k * (1 + 2 * L + 2 * L + 1));
      CHECK(s.count(CommOp::all_reduce) == calls + loss_calls);
      CHECK(s.sent(CommOp::all_reduce) == sent(CommOp::all_reduce, calls, stream) + loss_sent);
      CHECK(s.count(CommOp::all_gather) == 0);
      CHECK(s.count(CommOp::reduce_scatter) == 0);
    } else {
      // Per micro-batch, all of N·C elements: all-gathers = forward f of 2 column blocks per layer
      // and the head; backward g' of 2 row blocks per layer, the column blocks' inputs gathered
      // again (2 per layer and the head), the embedding's g'. Reduce-scatters = forward g of the
      // embedding and 2 row blocks per layer; backward f' of 2 column blocks per layer and the head.
      const std::uint64_t gathers = static_cast<std::uint64_t>(k * (2 * L + 1 + 2 * L + 2 * L + 1 + 1));
      const std::uint64_t scatters = static_cast<std::uint64_t>(k * (1 + 2 * L + 2 * L + 1));
      CHECK(s.count(CommOp::all_gather) == gathers);
      CHECK(s.sent(CommOp::all_gather) == sent(CommOp::all_gather, gathers, stream));
      CHECK(s.count(CommOp::reduce_scatter) == scatters);
      CHECK(s.sent(CommOp::reduce_scatter) == sent(CommOp::reduce_scatter, scatters, stream));
      // All-reduces: the loss's, and once per step the 2L + 1 RMSNorm weights' partial gradients.
      const std::uint64_t norms = static_cast<std::uint64_t>(2 * L + 1);
      CHECK(s.count(CommOp::all_reduce) == loss_calls + norms);
      CHECK(s.sent(CommOp::all_reduce) ==
            loss_sent + sent(CommOp::all_reduce, norms, static_cast<std::uint64_t>(C) * e));
    }
    // Data parallelism: one all-reduce of the rank's gradient shard (Ψ/t elements) per step.
    const CommStats& d = trainer.dp().stats();
    CHECK(d.count(CommOp::all_reduce) == (layout.dp > 1 ? 1u : 0u));
    if (layout.dp > 1)
      CHECK(d.payload_bytes[static_cast<int>(CommOp::all_reduce)] ==
            static_cast<std::uint64_t>(trainer.params().numel()) * e);
  }
}

// ---- memory: the whole logits never on one rank ----------------------------------------------------

TEST_CASE("the vocabulary-parallel head never holds the whole logits on one rank", "[ch06][mpi]") {
  Communicator& w = world();
  const TrainingConfig cfg = tp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::int64_t N = cfg.mbs * cfg.seq, V = cfg.model.vocab;
  for (const TpLayout& layout : layouts_for(w.size())) {
    if (layout.dp > 1) continue;
    INFO(layout.label() << ", rank " << w.rank());
    TpTrainer trainer(w, cfg, layout);
    const std::vector<Batch> micro = rank_micro_batches(*data, 0, 0, 1, cfg.mbs, cfg.seq);
    MemoryTracker& tracker = MemoryTracker::instance();
    tracker.clear_timeline();
    tracker.record_timeline(true);
    trainer.step(micro);
    tracker.record_timeline(false);
    std::int64_t largest = 0;  // the largest single allocation of the step
    for (const MemEvent& ev : tracker.timeline()) largest = std::max(largest, ev.delta);
    // This model's vocabulary (256) makes the logits [N, V/t] the step's largest tensor: the
    // largest allocation is exactly this rank's columns of them (the logits, or their gradient),
    // and never the [N, V] a single device holds.
    CHECK(largest == N * (V / layout.tp) * 4);
  }
}

TEST_CASE("TP and TP+SP in bf16 train like the single-rank bf16 baseline, to bf16 rounding", "[ch06][mpi]") {
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  TrainingConfig cfg = tp_training();
  cfg.dtype = DType::bf16;
  const auto data = make_dataset("synthetic", cfg.seed);
  const testing::Run base = testing::baseline(cfg, *data, 1);
  for (const TpLayout& layout : layouts_for(w.size())) {
    if (layout.dp > 1) continue;
    INFO(layout.label() << ", rank " << w.rank());
    const testing::Run got = tp_run(w, *metrics, cfg, *data, layout, 1);
    for (std::size_t s = 0; s < got.losses.size(); ++s) {
      INFO("step " << s << ": loss " << got.losses[s] << ", baseline " << base.losses[s]);
      // bf16 rounds at other places under TP: each row block's partial product is rounded to
      // bf16 before the t partials are summed (in bf16), where one device rounds the whole sum
      // once; each rounding is ≤ 2^-9 relative, and the loss averages N rows of them. Measured
      // ≤ 1e-4 relative over 3 steps; bounded by 1e-3, a quarter of one bf16 ulp (2^-8) of the
      // loss. A lost reduction or shard is an O(1) error.
      CHECK(std::fabs(got.losses[s] - base.losses[s]) <= 1e-3 * base.losses[s]);
    }
  }
}

// ---- memory: each layer's saved activations = the course's formula, divided as TP and SP divide it

TEST_CASE("each layer's saved activations per rank = the course's formula under TP and TP+SP", "[ch06][mpi]") {
  Communicator& w = world();
  const auto data = make_dataset("synthetic", 1);
  for (const TpLayout& layout : layouts_for(w.size())) {
    if (layout.dp > 1) continue;
    for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      for (DType dtype : {DType::f32, DType::bf16}) {
        TrainingConfig cfg = tp_training();
        cfg.recompute = mode;
        cfg.dtype = dtype;
        INFO(layout.label() << ", recompute " << recompute_name(mode) << ", " << dtype_name(dtype) << ", rank "
                            << w.rank());
        TpTrainer trainer(w, cfg, layout);
        const Batch b = data->batch(0, 0, cfg.mbs, cfg.seq);
        trainer.model().forward(b.inputs, b.targets);
        const std::int64_t want = calc::course_layer_activation_bytes(
            cfg.model, cfg.seq, cfg.mbs, mode, static_cast<std::int64_t>(dtype_size(dtype)), layout.tp, layout.sp);
        for (std::int64_t l = 1; l <= cfg.model.layers; ++l) {
          // The tracker's Activation growth while the layer ran, and what the layer declares.
          CHECK(trainer.model().measured_saved_bytes()[static_cast<std::size_t>(l)] == want);
          CHECK(trainer.model().saved_bytes()[static_cast<std::size_t>(l)] == want);
        }
        trainer.model().backward();
      }
    }
  }
}

// ---- on GPUs: the same chapter over a device communicator ----------------------------------------

TEST_CASE("the vocabulary-parallel cross-entropy on GPUs equals exercise 06.2's on the CPU", "[ch06][mpi][gpu]") {
  const auto gpus = testing::gpu_ranks();
  if (!gpus) return;
  Communicator& comm = world();
  const int t = comm.size(), r = comm.rank();
  const Device gpu = gpus->device;
  Communicator* const group = gpus->tensors.get();
  const std::int64_t N = 6, V = 40, Vr = V / t;
  Tensor logits = random_tensor({N, V}, "logits");
  ops::scale_inplace(logits, 8.0f);
  Tensor targets = Tensor::empty({N}, DType::i32);
  for (std::int64_t n = 0; n < N; ++n) targets.data<std::int32_t>()[n] = static_cast<std::int32_t>((n * 7 + 3) % V);
  const Tensor mine = as_tensor(block(logits, r * Vr, Vr, true), {N, Vr});
  Tensor lse_cpu;
  const double want = vocab_parallel_cross_entropy(comm, mine, targets, r * Vr, lse_cpu);
  Tensor dwant = Tensor::empty({N, Vr});
  vocab_parallel_cross_entropy_backward(mine, targets, r * Vr, lse_cpu, dwant, 0.5f);

  const Tensor mine_gpu = mine.to(gpu), targets_gpu = targets.to(gpu);
  Tensor lse;
  const double got = vocab_parallel_cross_entropy_cuda(*group, mine_gpu, targets_gpu, r * Vr, lse);
  INFO("rank " << r << " of t = " << t << " on " << gpu.str() << ": loss " << got << ", exercise 06.2's " << want);
  // The device sums Σ e^(z - m) in fp32 over ≤ 40 columns (worst case 40 ulps = 2.4e-6 relative;
  // the exercise sums in double): log s moves by ≤ 2.4e-6, a loss of ~8 by ≤ 3e-7 relative.
  CHECK(std::fabs(got - want) <= 1e-6 * std::fabs(want));
  REQUIRE(lse.defined());
  CHECK(lse.device() == gpu);
  CHECK(elementwise_mismatch(lse.to_floats(), lse_cpu.to_floats(), Tolerance::absolute(4e-6), r) == "");
  Tensor dgot = Tensor::empty({N, Vr}, DType::f32, MemCategory::Temporary, gpu);
  vocab_parallel_cross_entropy_backward_cuda(mine_gpu, targets_gpu, r * Vr, lse, dgot, 0.5f);
  // e^(z - lse) · 0.5/N ≤ 0.083 with lse off by ≤ 2.4e-6: ≤ 2e-7 apart, and expf's 2 ulps.
  CHECK(elementwise_mismatch(dgot.to_floats(), dwant.to_floats(), Tolerance::absolute(4e-7), r) == "");
  // A target outside the vocabulary is refused on every rank, before any communication.
  targets.data<std::int32_t>()[2] = static_cast<std::int32_t>(V);
  CHECK_THROWS_WITH(vocab_parallel_cross_entropy_cuda(*group, mine_gpu, targets.to(gpu), r * Vr, lse),
                    Catch::Contains("target 40 at row 2 is outside the vocabulary [0, 40)"));
}

TEST_CASE("TP, TP+SP and DP × TP on a device (GPUs, else the emulated cpu:1) train like the CPU baseline",
          "[ch06][mpi][gpu]") {
  const auto gpus = testing::device_ranks();
  Communicator& w = world();
  auto metrics = w.split(0, w.rank());
  TrainingConfig cfg = tp_training();
  const auto data = make_dataset("synthetic", cfg.seed);
  const TrainingConfig gpu_cfg = gpus.on_gpu(cfg);
  for (const TpLayout& layout : layouts_for(w.size())) {
    INFO(layout.label() << " on " << gpus.where() << ", rank " << w.rank());
    const testing::Run base = testing::baseline(cfg, *data, layout.dp);  // on the CPU
    const testing::Run got = tp_run(*gpus.tensors, *metrics, gpu_cfg, *data, layout, 1);
    testing::check_losses_follow(got.losses, base.losses);
    // The weights as the CPU layouts above (lr/30: a thirtieth of one update).
    CHECK(elementwise_mismatch(got.params, base.params, Tolerance::absolute(cfg.adamw.lr / 30), w.rank()) == "");
  }
}
