// The calculator's memory formulas: exact parameter counts of the Llama shapes, the playbook's
// worked activation number, the state bytes per precision, ZeRO sharding, TP / SP / CP / PP,
// the ordering of the recomputation modes, and this course's layer count against the model's
// own declaration of what it saves.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/calc/flops_model.hpp"
#include "common/calc/memory_model.hpp"
#include "common/error.hpp"
#include "common/model/model.hpp"
#include "tests/calc/calc_fixtures.hpp"
#include "tests/support/small_model.hpp"

using namespace usp;
using namespace usp::calc;

namespace {

TrainingSetup setup_of(const std::string& model, std::int64_t seq, Recompute r = Recompute::none,
                       Precision p = Precision::mixed) {
  TrainingSetup s;
  s.model = ModelConfig::builtin(model);
  s.seq = seq;
  s.mbs = 1;
  s.recompute = r;
  s.precision = p;
  return s;
}

std::string usage_error_of(const TrainingSetup& s) {
  try {
    s.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("exact parameter counts of the Llama shapes", "[calc][params]") {
  // Written out from the published shapes (the oracle is the arithmetic, not the code):
  // 8B: 2·128256·4096 + 32·(4096² + 2·4096·1024 + 4096² + 3·4096·14336 + 2·4096) + 4096.
  CHECK(ModelConfig::builtin("llama3.1-8b").num_parameters() == 8'030'261'248);
  CHECK(ModelConfig::builtin("llama3.1-70b").num_parameters() == 70'553'706'496);
  CHECK(ModelConfig::builtin("llama3.1-405b").num_parameters() == 405'853'388'800);
  // The tied 3.2 models: one 128256 × h matrix (published as 1.24B and 3.21B).
  CHECK(ModelConfig::builtin("llama3.2-1b").num_parameters() == 1'235'814'400);
  CHECK(ModelConfig::builtin("llama3.2-3b").num_parameters() == 3'212'749'824);
  // The playbook's GPT-style estimate h·v + L·(12h² + 13h) + 2h for 8B, by hand:
  // 4096·128256 + 32·(12·4096² + 13·4096) + 2·4096.
  CHECK(playbook_num_parameters(ModelConfig::builtin("llama3.1-8b")) == 6'969'499'648);
  // Without TP and PP a rank holds every parameter, for every built-in shape.
  for (const std::string& name : ModelConfig::builtin_names()) {
    INFO(name);
    CHECK(parameters_per_rank(setup_of(name, 1024)) == ModelConfig::builtin(name).num_parameters());
  }
}

TEST_CASE("the playbook's worked number: 8B, s = 4096, b = 1, no recompute = 97 GiB of activations",
          "[calc][activations]") {
  const TrainingSetup s = setup_of("llama3.1-8b", 4096);
  const MemoryBreakdown m = memory_per_rank(s);
  // s·b·h·L·(34 + 5·a·s/h) = 4096·4096·32·(34 + 160) bytes
  CHECK(m.activations == 104'152'956'928);
  CHECK(m.activations == 97ll << 30);  // exactly 97 GiB
  CHECK(playbook_layer_activation_bytes(s) * 32 == m.activations);
  // fp32 activations are 4 bytes: twice the 16-bit count.
  CHECK(memory_per_rank(setup_of("llama3.1-8b", 4096, Recompute::none, Precision::fp32)).activations ==
        2 * m.activations);
}

TEST_CASE("states per parameter: fp32 4+4+8, mixed 2+2+12, fp32 gradient accumulation +4", "[calc][states]") {
  const std::int64_t N = ModelConfig::builtin("llama3.1-8b").num_parameters();
  TrainingSetup s = setup_of("llama3.1-8b", 1024, Recompute::none, Precision::fp32);
  MemoryBreakdown m = memory_per_rank(s);
  CHECK(m.parameters == 4 * N);
  CHECK(m.gradients == 4 * N);
  CHECK(m.optimizer == 8 * N);
  CHECK(m.master_weights == 0);

  s.precision = Precision::mixed;
  m = memory_per_rank(s);
  CHECK(m.parameters == 2 * N);
  CHECK(m.gradients == 2 * N);
  CHECK(m.optimizer == 12 * N);  // fp32 master 4N + Adam 8N
  CHECK(m.master_weights == 4 * N);

  s.fp32_grad_accum = true;
  m = memory_per_rank(s);
  CHECK(m.gradients == 6 * N);
  CHECK(m.total() == 20 * N + m.activations);
}

TEST_CASE("ZeRO per-rank bytes: 2N+2N+12N/Nd, 2N+14N/Nd, 16N/Nd (mixed); 4N+4N+8N pattern (fp32)",
          "[calc][zero]") {
  const std::int64_t N = ModelConfig::builtin("llama3.1-8b").num_parameters();
  const std::int64_t Nd = 8;
  REQUIRE(N % Nd == 0);  // 8B shards exactly over 8 ranks
  const std::int64_t shard = N / Nd;
  TrainingSetup s = setup_of("llama3.1-8b", 4096);
  s.dp = Nd;
  const std::int64_t activations = memory_per_rank(setup_of("llama3.1-8b", 4096)).activations;
  // expected {parameters, gradients, optimizer} per stage
  const std::int64_t mixed[4][3] = {{2 * N, 2 * N, 12 * N},
                                    {2 * N, 2 * N, 12 * shard},
                                    {2 * N, 2 * shard, 12 * shard},
                                    {2 * shard, 2 * shard, 12 * shard}};
  const std::int64_t fp32[4][3] = {{4 * N, 4 * N, 8 * N},
                                   {4 * N, 4 * N, 8 * shard},
                                   {4 * N, 4 * shard, 8 * shard},
                                   {4 * shard, 4 * shard, 8 * shard}};
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("ZeRO-" << stage);
    s.zero = stage;
    s.precision = Precision::mixed;
    MemoryBreakdown m = memory_per_rank(s);
    CHECK(m.parameters == mixed[stage][0]);
    CHECK(m.gradients == mixed[stage][1]);
    CHECK(m.optimizer == mixed[stage][2]);
    CHECK(m.activations == activations);  // ZeRO never shards activations
    s.precision = Precision::fp32;
    m = memory_per_rank(s);
    CHECK(m.parameters == fp32[stage][0]);
    CHECK(m.gradients == fp32[stage][1]);
    CHECK(m.optimizer == fp32[stage][2]);
    CHECK(m.activations == 2 * activations);
  }
  // The playbook's totals for stage 1..3 (k = 12), bytes of the states only.
  s.precision = Precision::mixed;
  s.zero = 1;
  CHECK(memory_per_rank(s).total() - activations == 4 * N + 12 * N / Nd);
  s.zero = 2;
  CHECK(memory_per_rank(s).total() - activations == 2 * N + 14 * N / Nd);
  s.zero = 3;
  CHECK(memory_per_rank(s).total() - activations == 16 * N / Nd);

  // A count that does not divide: a shard is ceil(N/Nd) elements (padded flat buffer).
  TrainingSetup tiny = setup_of("usp-tiny", 64);
  tiny.dp = 3;
  tiny.zero = 3;
  const std::int64_t n = tiny.model.num_parameters();  // 131392 = 3·43797 + 1
  REQUIRE(n % 3 == 1);
  CHECK(memory_per_rank(tiny).parameters == 2 * (n / 3 + 1));
  // ZeRO with a single DP rank changes nothing.
  TrainingSetup one = setup_of("llama3.1-8b", 4096);
  one.zero = 3;
  CHECK(memory_per_rank(one).total() == memory_per_rank(setup_of("llama3.1-8b", 4096)).total());
}

TEST_CASE("TP and SP activations per layer: s·b·h·(10 + 24/t + 5·a·s/(h·t)) and s·b·h·(34/t + 5·a·s/(h·t))",
          "[calc][tp]") {
  const std::int64_t s = 4096, b = 1, h = 4096, a = 32;  // llama3.1-8b
  const double sbh = static_cast<double>(s * b * h);
  for (std::int64_t t : {1, 2, 4, 8}) {
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      INFO("t = " << t << ", recompute " << recompute_name(r));
      TrainingSetup st = setup_of("llama3.1-8b", s, r);
      st.tp = t;
      const double scores = r == Recompute::none ? 5.0 * a * s / (h * t) : 0.0;
      // Every value here is a multiple of a power of two well inside a double's 53 bits: exact.
      const double tp = r == Recompute::full ? 2 * sbh : sbh * (10 + 24.0 / t + scores);
      const double sp = r == Recompute::full ? 2 * sbh / t : sbh * (34.0 / t + scores);
      CHECK(playbook_layer_activation_bytes(st) == static_cast<std::int64_t>(tp));
      st.sp = true;
      CHECK(playbook_layer_activation_bytes(st) == static_cast<std::int64_t>(sp));
    }
  }
  // t = 8 by hand: 4096·4096·(10 + 3 + 20) and 4096·4096·(4.25 + 20).
  TrainingSetup st = setup_of("llama3.1-8b", 4096);
  st.tp = 8;
  CHECK(playbook_layer_activation_bytes(st) == 553'648'128);
  st.sp = true;
  CHECK(playbook_layer_activation_bytes(st) == 406'847'488);
}

TEST_CASE("TP parameters: linear weights and vocabulary split t ways, norms replicated", "[calc][tp]") {
  const ModelConfig c = ModelConfig::builtin("llama3.1-8b");
  const std::int64_t N = c.num_parameters(), norms = 2 * c.hidden * c.layers + c.hidden;
  for (std::int64_t t : {1, 2, 4, 8}) {  // 128256 and the kv heads (8) divide by t
    TrainingSetup s = setup_of("llama3.1-8b", 4096);
    s.tp = t;
    // t ranks together hold N, plus t-1 extra copies of the replicated RMSNorm weights.
    CHECK(t * parameters_per_rank(s) - (t - 1) * norms == N);
  }
  // 70B at t = 16 > 8 kv heads: each rank keeps one (replicated) kv head for k and v.
  const ModelConfig c70 = ModelConfig::builtin("llama3.1-70b");
  const std::int64_t h = c70.hidden, d = c70.head_dim(), L = c70.layers;
  const std::int64_t split = 2 * h * h * L + 3 * h * c70.ffn * L + 2 * c70.vocab * h;  // q, o, MLP, emb, head
  TrainingSetup s70 = setup_of("llama3.1-70b", 4096);
  s70.tp = 16;
  CHECK(parameters_per_rank(s70) == split / 16 + 2 * h * d * L + 2 * h * L + h);
  CHECK(parameters_per_rank(s70) == 4'494'729'216);
}

TEST_CASE("CP divides the activations by c; PP keeps p micro-batches of L/p layers on the first stage",
          "[calc][cp][pp]") {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const TrainingSetup base = setup_of("llama3.1-8b", 8192, r);
    for (std::int64_t c : {2, 4, 8}) {
      TrainingSetup s = base;
      s.cp = c;
      CHECK(memory_per_rank(s).activations * c == memory_per_rank(base).activations);
      CHECK(memory_per_rank(s).parameters == memory_per_rank(base).parameters);
    }
  }
  // 8B, p = 4 divides L = 32: 8 layers × 4 in flight = the whole model's activations of one
  // micro-batch; parameters = the embedding + 8 layers.
  const ModelConfig c = ModelConfig::builtin("llama3.1-8b");
  TrainingSetup s = setup_of("llama3.1-8b", 4096);
  s.pp = 4;
  CHECK(layers_on_first_stage(s) == 8);
  CHECK(microbatches_in_flight(s) == 4);
  CHECK(memory_per_rank(s).activations == memory_per_rank(setup_of("llama3.1-8b", 4096)).activations);
  CHECK(parameters_per_rank(s) == c.vocab * c.hidden + 8 * c.params_per_layer());
  // 405B, p = 8 does not divide L = 126: the first stage takes ceil(126/8) = 16 layers.
  TrainingSetup big = setup_of("llama3.1-405b", 4096);
  big.pp = 8;
  CHECK(layers_on_first_stage(big) == 16);
  CHECK(memory_per_rank(big).activations == 16 * 8 * playbook_layer_activation_bytes(big));
}

TEST_CASE("recomputation: none > selective = 34·s·b·h·L > full = 2·s·b·h·L", "[calc][recompute]") {
  for (const char* name : {"llama3.2-1b", "llama3.2-3b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b"}) {
    for (std::int64_t seq : {1024, 2048, 4096, 8192, 16384}) {
      INFO(name << " s = " << seq);
      const ModelConfig c = ModelConfig::builtin(name);
      const std::int64_t none = memory_per_rank(setup_of(name, seq, Recompute::none)).activations;
      const std::int64_t sel = memory_per_rank(setup_of(name, seq, Recompute::selective)).activations;
      const std::int64_t full = memory_per_rank(setup_of(name, seq, Recompute::full)).activations;
      CHECK(none > sel);
      CHECK(sel > full);
      CHECK(sel == 34 * seq * c.hidden * c.layers);
      CHECK(full == 2 * seq * c.hidden * c.layers);
      CHECK(none - sel == 5 * c.heads * seq * seq * c.layers);
    }
  }
}

TEST_CASE("this course's layer: the calculator's count equals what the model declares and measures",
          "[calc][course]") {
  const ModelConfig cfg = small_gqa_model("calc-check");
  const std::int64_t B = 2, T = 11;
  Tensor tokens = Tensor::empty({B, T}, DType::i32);
  for (std::int64_t i = 0; i < B * T; ++i)
    tokens.data<std::int32_t>()[i] = static_cast<std::int32_t>((i * 7 + 3) % cfg.vocab);
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    for (DType adt : {DType::f32, DType::bf16}) {
      INFO("recompute " << recompute_name(mode) << ", activations " << dtype_name(adt));
      ParamStore params(cfg);
      params.init(1);
      Model model(params, {mode, adt});
      model.forward(tokens, tokens);
      const std::int64_t want = course_layer_activation_bytes(cfg, T, B, mode, static_cast<std::int64_t>(dtype_size(adt)));
      for (std::int64_t u = 1; u <= cfg.layers; ++u) {
        CHECK(model.saved_bytes()[static_cast<std::size_t>(u)] == want);
        CHECK(model.measured_saved_bytes()[static_cast<std::size_t>(u)] == want);
      }
      model.backward();
    }
  }
  // By hand for llama3.1-8b at s = 4096, b = 1, bf16, no recompute, per token:
  // (6·4096 + 2·1024 + 3·14336 + 32·4096)·2 + 8 = 401416 bytes.
  CHECK(course_layer_activation_bytes(ModelConfig::builtin("llama3.1-8b"), 4096, 1, Recompute::none, 2) ==
        4096ll * 401416);
}

TEST_CASE("this course's layer under chapter 06's TP and TP + SP split, by hand", "[calc][course][tp]") {
  // C = 32, H = 8 heads of D = 4, G = 4 kv heads, F = 48: t = 1, 2, 4 divide H, G and F.
  // s = 6, b = 2: N = 12 tokens, split 6 / 3 rows per rank under SP.
  const ModelConfig cfg = testing::small_model(
      {.name = "tp-check", .vocab = 29, .hidden = 32, .layers = 2, .heads = 8, .kv_heads = 4, .ffn = 48, .max_seq = 64});
  const std::int64_t s = 6, b = 2;
  // Per stream row (bf16): x, h1, x2, h2 = 4·32·2 = 256 B, + rstd1, rstd2 = 8 B: 264 B.
  // Per token, heads / ffn split over t (bf16 elements): q, a 2·(8/t)·4, k, v 2·(4/t)·4,
  // g, u, z 3·48/t: 240 / t; probabilities (8/t)·6 = 48 / t.
  //   t = 1: 12·264 = 3168 (stream) + 12·240·2 = 5760 (+ 12·48·2 = 1152 with none)
  //   t = 2: TP 3168, SP 6·264 = 1584; split 2880 (+ 576);  t = 4: TP 3168, SP 792; split 1440 (+ 288)
  //   full: the stream input x alone, 12·32·2 = 768 B, or 6·64 = 384, 3·64 = 192 under SP.
  struct Case {
    std::int64_t t;
    bool sp;
    Recompute r;
    std::int64_t bytes;
  };
  const std::vector<Case> cases = {
      {1, false, Recompute::none, 10080}, {1, false, Recompute::selective, 8928}, {1, false, Recompute::full, 768},
      {1, true, Recompute::none, 10080},  {1, true, Recompute::selective, 8928},  {1, true, Recompute::full, 768},
      {2, false, Recompute::none, 6624},  {2, false, Recompute::selective, 6048}, {2, false, Recompute::full, 768},
      {2, true, Recompute::none, 5040},   {2, true, Recompute::selective, 4464},  {2, true, Recompute::full, 384},
      {4, false, Recompute::none, 4896},  {4, false, Recompute::selective, 4608}, {4, false, Recompute::full, 768},
      {4, true, Recompute::none, 2520},   {4, true, Recompute::selective, 2232},  {4, true, Recompute::full, 192},
  };
  for (const Case& c : cases) {
    INFO("t = " << c.t << (c.sp ? " + SP" : "") << ", recompute " << recompute_name(c.r));
    CHECK(course_layer_activation_bytes(cfg, s, b, c.r, 2, c.t, c.sp) == c.bytes);
  }
  // t = 1 is the single-device count the model's own declaration was checked against above.
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    CHECK(course_layer_activation_bytes(cfg, s, b, r, 2, 1, false) == course_layer_activation_bytes(cfg, s, b, r, 2));
  // fp32, t = 2 + SP, none: 6 rows·(4·32·4 + 8) + 12 tokens·(120 + 24)·4 = 3120 + 6912.
  CHECK(course_layer_activation_bytes(cfg, s, b, Recompute::none, 4, 2, true) == 10032);

  // What holds for every mode: SP divides the whole layer by t (every tensor is split: the
  // stream by rows, the rest by heads / ffn); TP alone leaves the replicated stream,
  // N·(4·C·e + 8) = 3168 B, on every rank, so TP − SP = (1 − 1/t)·3168 (full: the input x).
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const std::int64_t one = course_layer_activation_bytes(cfg, s, b, r, 2);
    for (std::int64_t t : {2, 4}) {
      INFO("t = " << t << ", recompute " << recompute_name(r));
      const std::int64_t tp = course_layer_activation_bytes(cfg, s, b, r, 2, t, false);
      const std::int64_t sp = course_layer_activation_bytes(cfg, s, b, r, 2, t, true);
      CHECK(t * sp == one);
      CHECK(tp - sp == (r == Recompute::full ? 768 : 3168) * (t - 1) / t);
    }
  }

  // The split must be exact: t dividing H, G and F; with SP, N too (s = 5, b = 2: 10 tokens).
  CHECK_THROWS_AS(course_layer_activation_bytes(cfg, s, b, Recompute::none, 2, 3, false), UsageError);  // 8 heads
  CHECK_THROWS_AS(course_layer_activation_bytes(cfg, s, b, Recompute::none, 2, 8, false), UsageError);  // 4 kv heads
  CHECK_THROWS_AS(course_layer_activation_bytes(cfg, s, b, Recompute::none, 2, 0, false), UsageError);
  CHECK_THROWS_AS(course_layer_activation_bytes(cfg, 5, 2, Recompute::full, 2, 4, true), UsageError);
  CHECK(course_layer_activation_bytes(cfg, 5, 2, Recompute::full, 2, 4, false) == 10 * 64);
  CHECK(course_layer_activation_bytes(cfg, 5, 2, Recompute::full, 2, 2, true) == 5 * 64);
  // 70B at t = 16: the calculator replicates the 8 kv heads, this course's model cannot.
  CHECK_THROWS_WITH(
      course_layer_activation_bytes(ModelConfig::builtin("llama3.1-70b"), 4096, 1, Recompute::none, 2, 16, true),
      Catch::Contains("the kv heads (8)"));
}

TEST_CASE("impossible layouts are usage errors with one clear message", "[calc][validate]") {
  TrainingSetup s = setup_of("llama3.1-8b", 4096);
  s.tp = 3;
  CHECK(usage_error_of(s) == "--tp 3 must divide the number of heads (32)");
  s = setup_of("llama3.1-8b", 4096);
  s.cp = 3;
  CHECK(usage_error_of(s) == "--seq 4096 must be divisible by --cp 3");
  s = setup_of("llama3.1-8b", 4096);
  s.ep = 2;
  CHECK_THAT(usage_error_of(s), Catch::Contains("expert parallelism needs a mixture of experts"));
  s = setup_of("mixtral-8x7b", 4096);
  s.ep = 4;
  s.dp = 2;
  CHECK(usage_error_of(s) == "--ep 4 must divide dp·cp = 2 (the experts are spread over ranks that are data-parallel for the rest)");
  s = setup_of("llama3.1-8b", 4096);
  s.pp = 33;
  CHECK(usage_error_of(s) == "--pp 33 must be <= the number of layers (32)");
  s = setup_of("llama3.1-8b", 4096, Recompute::none, Precision::fp32);
  s.fp32_grad_accum = true;
  CHECK_THAT(usage_error_of(s), Catch::Contains("--fp32-grad-accum only applies to --precision mixed"));
  s = setup_of("llama3.1-8b", 4100);
  s.tp = 8;
  s.sp = true;
  CHECK_THAT(usage_error_of(s), Catch::Contains("must be divisible by --tp 8 with --sp"));
  s = setup_of("llama3.1-8b", 4096);
  s.zero = 4;
  CHECK(usage_error_of(s) == "--zero must be 0, 1, 2 or 3, got 4");
  // valid corner cases: ZeRO with one DP rank, SP with t = 1, t = 16 over 8 kv heads (70B)
  s = setup_of("llama3.1-8b", 4096);
  s.zero = 2;
  s.sp = true;
  CHECK(usage_error_of(s) == "no error");
  s = setup_of("llama3.1-70b", 4096);
  s.tp = 16;
  CHECK(usage_error_of(s) == "no error");
}

TEST_CASE("a mixture of experts: total and active parameters, experts per rank under EP, ZeRO over the expert group",
          "[calc][moe]") {
  // Mixtral 8x7B's published counts: 46.7B parameters, 12.9B active per token.
  TrainingSetup s = setup_of("mixtral-8x7b", 4096);
  const ModelConfig& c = s.model;
  CHECK(c.num_parameters() == 46702792704);
  CHECK(c.active_parameters() == 12879925248);
  // By hand: per layer 8 experts of 3·h·f and the router E·h; attention 2·h² + 2·h·(g·d), norms 2h.
  const std::int64_t h = 4096, f = 14336, E = 8, L = 32, kv = 8 * 128;
  const std::int64_t expert = 3 * h * f, attention = 2 * h * h + 2 * h * kv + 2 * h;
  CHECK(parameters_per_rank(s) == 2 * 32000 * h + L * (attention + E * expert + E * h) + h);
  CHECK(expert_parameters_per_rank(s) == L * E * expert);
  // EP 8 over dp 8: one expert per layer per rank, everything else whole.
  s.dp = 8;
  s.ep = 8;
  CHECK(expert_parameters_per_rank(s) == L * expert);
  CHECK(parameters_per_rank(s) == 2 * 32000 * h + L * (attention + expert + E * h) + h);
  // ZeRO-1: the dense states shard over dp = 8, the experts' over their data-parallel group, here
  // dp·cp/ep = 1 rank (each expert has one holder): 12 bytes per parameter in mixed precision.
  s.zero = 1;
  const std::int64_t dense = parameters_per_rank(s) - expert_parameters_per_rank(s);
  CHECK(memory_per_rank(s).optimizer == 12 * ((dense + 7) / 8 + L * expert));
  // With ep 4 over dp 8, each expert is held by two ranks: its states shard two ways.
  s.ep = 4;
  CHECK(memory_per_rank(s).optimizer == 12 * ((dense + 7) / 8 + (L * 2 * expert + 1) / 2));
  // The FLOPs follow the active parameters: 6 N_active + 12 L h s per token.
  s = setup_of("mixtral-8x7b", 4096);
  const FlopsEstimate flops = flops_per_step(s);
  CHECK(flops.model == (6.0 * 12879925248.0 + 12.0 * 32 * 4096 * 4096) * 4096);
}
