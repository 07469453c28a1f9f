// The usp_eval end-to-end tests' shared halves (chapters 06 and 09; the ctest entry comes from
// usp_eval_fixture_test in tests/CMakeLists.txt). A hidden "fixture" test case trains a parallel
// model, saves its checkpoint to <dir>/ckpt, then writes a text to <dir>/text.txt and the parallel
// model's own loss on it (save_text_and_expected_loss); usp_eval then evaluates the checkpoint on
// one device into <dir>/eval.json; a hidden "check" test case reads both (read_eval_result) and
// compares (check_eval_result). <dir> is $USP_EVAL_FIXTURE_DIR.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "common/comm/communicator.hpp"
#include "common/data/text_eval.hpp"
#include "common/io/json_value.hpp"
#include "common/model/model.hpp"

namespace usp::testing {

inline constexpr std::int64_t kEvalSeq = 16, kEvalBatch = 3;  // what the ctest entry passes to usp_eval

inline std::string eval_fixture_dir() {
  const char* d = std::getenv("USP_EVAL_FIXTURE_DIR");
  REQUIRE(d != nullptr);
  return d;
}

// Some English with every line different, a little over 2 KB.
inline std::string eval_sample_text() {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += "Line " + std::to_string(i) + ": the parallel model saved " + std::to_string(i * 7 % 13) + " whole matrices.\n";
  return s;
}

inline void save_expected_loss(const std::string& dir, double loss) {
  std::ofstream(dir + "/expected_loss.txt") << std::setprecision(17) << loss << "\n";
}

// The fixture half's end, once the parallel model is trained and its checkpoint saved: rank 0
// writes the text; every rank of w evaluates the same windows with its part of the model (a
// collective over the model's ranks), and rank 0 saves that loss, which must be finite.
inline void save_text_and_expected_loss(Communicator& w, const std::string& dir, Model& model) {
  if (w.rank() == 0) std::ofstream(dir + "/text.txt", std::ios::binary) << eval_sample_text();
  w.barrier();
  const TextLoss loss = evaluate_text(model, TextCorpus(dir + "/text.txt", 0), kEvalSeq, kEvalBatch);
  REQUIRE(std::isfinite(loss.mean_loss));
  if (w.rank() == 0) save_expected_loss(dir, loss.mean_loss);
}

struct EvalResult {
  double expected = 0;  // the parallel model's loss (save_expected_loss)
  double loss = 0;      // usp_eval's
  std::string model;    // the checkpoint's model name, as usp_eval printed it
  std::int64_t seq = 0;
};

inline EvalResult read_eval_result(const std::string& dir) {
  EvalResult r;
  std::ifstream in(dir + "/expected_loss.txt");
  REQUIRE(in >> r.expected);
  std::ifstream json_file(dir + "/eval.json");
  REQUIRE(json_file);
  std::stringstream json;
  json << json_file.rdbuf();
  const JsonValue got = parse_json(json.str(), "eval.json");
  r.loss = json_double(got.at("loss"));
  r.model = json_string(got.at("model"));
  r.seq = json_int64(got.at("seq"));
  return r;
}

// The check half: usp_eval read the checkpoint of `model_name` on the windows of kEvalSeq tokens,
// and its loss is finite and within `rel` (relative) of the parallel model's.
inline void check_eval_result(const std::string& model_name, double rel) {
  const EvalResult r = read_eval_result(eval_fixture_dir());
  INFO("usp_eval " << r.loss << ", the parallel model " << r.expected);
  CHECK(r.model == model_name);
  CHECK(r.seq == kEvalSeq);
  CHECK(std::isfinite(r.loss));
  CHECK(std::fabs(r.loss - r.expected) <= rel * r.expected);
}

}  // namespace usp::testing
