// Evaluating a model on a text file (what usp_eval prints), against oracles: a model with all
// parameters zero predicts the uniform distribution, so its loss is ln 256 on any text; a
// random model's loss equals the mean of its per-window losses computed one window at a time.
//
// The two hidden cases at the end are usp_eval's end-to-end test (tests/io/CMakeLists.txt):
// "[.usp_eval_fixture]" writes checkpoints and a text into $USP_IO_FIXTURE_DIR, the test runs
// the usp_eval executable on them, and "[.usp_eval_check]" checks what it printed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "common/data/text_eval.hpp"
#include "common/model/generate.hpp"
#include "common/io/checkpoint.hpp"
#include "common/io/json_value.hpp"
#include "tests/io/io_fixtures.hpp"

using namespace usp;
using usp::testing::read_file;
using usp::testing::TempDir;
using usp::testing::write_file;

namespace {

// Some English with every line different, a little over 2 KB.
std::string sample_text() {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += "Line " + std::to_string(i) + ": the quick brown fox jumps over " + std::to_string(i * 7 % 13) +
         " lazy dogs.\n";
  return s;
}

constexpr double kLn256 = 5.545177444479562;  // ln 256 = 8 ln 2

std::string fixture_dir() {
  const char* d = std::getenv("USP_IO_FIXTURE_DIR");
  REQUIRE(d != nullptr);
  return d;
}

}  // namespace

TEST_CASE("text eval: a zero model scores ln 256 on any text", "[io][eval]") {
  TempDir dir("eval_zero");
  write_file(dir / "t.txt", sample_text());
  const TextCorpus text(dir / "t.txt", 0);
  ParamStore zero(ModelConfig::builtin("usp-tiny"), DType::f32, Device::cpu(), false);  // all zeros
  Model model(zero);
  const TextLoss r = evaluate_text(model, text, 32, 5);
  CHECK(r.windows == text.size() / 33);
  CHECK(r.tokens == r.windows * 32);
  // Zero weights give zero logits, so every prediction is log-sum-exp of 256 zeros = ln 256;
  // computed in fp32 (relative rounding ~6e-8 per op, a handful of ops), averaged in double.
  CHECK(r.mean_loss == Approx(kLn256).epsilon(1e-6));
}

TEST_CASE("text eval: the batched mean equals the per-window mean", "[io][eval]") {
  TempDir dir("eval_random");
  const std::string bytes = sample_text();
  write_file(dir / "t.txt", bytes);
  const TextCorpus text(dir / "t.txt", 0);
  ParamStore params(ModelConfig::builtin("usp-tiny"), DType::f32, Device::cpu(), false);
  params.init(3);
  Model model(params);
  constexpr std::int64_t seq = 24;
  const TextLoss r = evaluate_text(model, text, seq, 7);  // 7 does not divide the window count
  const std::int64_t windows = static_cast<std::int64_t>(bytes.size()) / (seq + 1);
  REQUIRE(r.windows == windows);

  double sum = 0;
  for (std::int64_t w = 0; w < windows; ++w) {
    Tensor in = Tensor::empty({1, seq}, DType::i32), tg = Tensor::empty({1, seq}, DType::i32);
    for (std::int64_t j = 0; j < seq; ++j) {
      in.data<std::int32_t>()[j] = static_cast<unsigned char>(bytes[static_cast<std::size_t>(w * (seq + 1) + j)]);
      tg.data<std::int32_t>()[j] = static_cast<unsigned char>(bytes[static_cast<std::size_t>(w * (seq + 1) + j + 1)]);
    }
    sum += model.evaluate(in, tg);
  }
  // Same math, different batching: fp32 matmuls and reductions may round differently
  // (unit roundoff 6e-8, sums of <= 192 terms, a mean over 7·24 positions) — far below 1e-5.
  CHECK(r.mean_loss == Approx(sum / static_cast<double>(windows)).epsilon(1e-5));
  CHECK(r.mean_loss > 5.0);  // an untrained model is near uniform (ln 256 = 5.55)
}

TEST_CASE("text eval: inputs the model cannot take are refused", "[io][eval]") {
  TempDir dir("eval_bad");
  write_file(dir / "t.txt", sample_text());
  const TextCorpus text(dir / "t.txt", 0);
  ModelConfig small = ModelConfig::builtin("usp-tiny");
  small.vocab = 100;
  ParamStore p100(small, DType::f32, Device::cpu(), false);
  Model m100(p100);
  CHECK_THROWS_WITH(evaluate_text(m100, text, 16, 2), "the model's vocab_size 100 is smaller than the byte vocabulary (256)");
  ModelConfig shortctx = ModelConfig::builtin("usp-tiny");
  shortctx.max_seq = 8;
  ParamStore p8(shortctx, DType::f32, Device::cpu(), false);
  Model m8(p8);
  CHECK_THROWS_WITH(evaluate_text(m8, text, 16, 2), "seq 16 exceeds the model's max_position_embeddings 8");
}

// ---- usp_eval end to end (run by the usp_eval_end_to_end test, hidden otherwise) ------------

TEST_CASE("usp_eval fixture: checkpoints and a text", "[.usp_eval_fixture]") {
  const std::string d = fixture_dir();
  write_file(d + "/text.txt", sample_text());
  const ModelConfig c = ModelConfig::builtin("usp-tiny");
  save_checkpoint(d + "/zero", ParamStore(c, DType::f32, Device::cpu(), false));
  for (DType dtype : {DType::f32, DType::bf16}) {
    ParamStore p(c, dtype, Device::cpu(), false);
    p.init(8);
    save_checkpoint(d + "/" + dtype_name(dtype), p);
  }
}

TEST_CASE("usp_eval check: the printed losses", "[.usp_eval_check]") {
  // usp_eval ran with --seq 16 --batch 3 --json on each checkpoint.
  const std::string d = fixture_dir();
  const TextCorpus text(d + "/text.txt", 0);
  const std::int64_t windows = text.size() / 17;
  auto output = [&](const std::string& name) { return parse_json(read_file(d + "/" + name + ".json"), name + ".json"); };

  const JsonValue zero = output("zero");
  CHECK(json_int64(zero.at("windows")) == windows);
  CHECK(json_int64(zero.at("tokens")) == windows * 16);
  CHECK(json_int64(zero.at("seq")) == 16);
  CHECK(json_string(zero.at("model")) == "usp-tiny");
  CHECK(json_string(zero.at("dtype")) == "float32");
  CHECK(json_double(zero.at("loss")) == Approx(kLn256).epsilon(1e-6));  // the uniform oracle, as above
  CHECK(json_double(zero.at("bits_per_byte")) == Approx(8.0).epsilon(1e-6));
  CHECK(json_double(zero.at("perplexity")) == Approx(256.0).epsilon(1e-5));

  // Random checkpoints: the same numbers as evaluating the saved parameters in this process
  // (same batches, same code: equal to the last bit; the JSON text round-trips a double).
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dtype));
    const ModelConfig c = ModelConfig::builtin("usp-tiny");
    ParamStore stored(c, dtype, Device::cpu(), false);
    stored.init(8);
    ParamStore wide(c, DType::f32, Device::cpu(), false);  // bf16 values widened exactly
    convert_to_float(dtype, stored.flat().raw(), wide.flat().data<float>(), static_cast<std::size_t>(wide.numel()));
    Model model(wide);
    const TextLoss expected = evaluate_text(model, text, 16, 3);
    const JsonValue got = output(dtype_name(dtype));
    CHECK(json_string(got.at("dtype")) == (dtype == DType::f32 ? "float32" : "bfloat16"));
    CHECK(json_double(got.at("loss")) == expected.mean_loss);
    CHECK(json_int64(got.at("windows")) == windows);
  }
}

TEST_CASE("usp_sample check: the printed tokens are generate()'s on the checkpoint", "[.usp_sample_check]") {
  // usp_sample ran --json on the f32 and bf16 checkpoints: greedy (g_*.json) and with
  // --temperature 0.9 --top-k 20 --seed 5 (s_*.json), --prompt "Line 3: the" --tokens 40.
  const std::string d = fixture_dir();
  const std::string prompt_text = "Line 3: the";
  const std::vector<std::int32_t> prompt(prompt_text.begin(), prompt_text.end());
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dtype));
    const ModelConfig c = ModelConfig::builtin("usp-tiny");
    ParamStore stored(c, dtype, Device::cpu(), false);
    stored.init(8);
    ParamStore wide(c, DType::f32, Device::cpu(), false);  // what usp_sample runs: widened exactly
    convert_to_float(dtype, stored.flat().raw(), wide.flat().data<float>(), static_cast<std::size_t>(wide.numel()));
    for (const std::string kind : {"g", "s"}) {
      const SamplingSettings s = kind == "g" ? SamplingSettings{0, 40, 1} : SamplingSettings{0.9, 20, 5};
      const Generation expected = generate(wide, prompt, 40, s);
      const JsonValue got = parse_json(read_file(d + "/" + kind + "_" + dtype_name(dtype) + ".json"), kind + " json");
      std::vector<std::int32_t> tokens;
      for (const JsonValue& t : got.at("tokens")) tokens.push_back(static_cast<std::int32_t>(json_int64(t)));
      INFO(kind << ": " << json_string(got.at("text")));
      CHECK(tokens == expected.tokens);
      CHECK(json_string(got.at("prompt")) == prompt_text);
      CHECK(json_int64(got.at("cache_bytes")) == 2 * c.layers * (11 + 40) * c.kv_dim() * 4);
    }
  }
}

