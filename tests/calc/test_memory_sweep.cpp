// The sweeps behind the analytic plots: the right rows, each equal to the calculator's answer
// for its configuration, and a CSV with the columns the plot scripts read.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/calc/memory_sweep.hpp"
#include "common/error.hpp"

using namespace usp;
using namespace usp::calc;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) lines.push_back(line);
  return lines;
}
}  // namespace

TEST_CASE("the figures' sweeps: rows, order and values", "[calc][sweep]") {
  const std::vector<SweepRow> seq = run_sweep(figure_memory_vs_seq());
  REQUIRE(seq.size() == 3 * 5);
  CHECK(seq[0].setup.model.name == "llama3.1-8b");
  CHECK(seq[0].setup.seq == 1024);
  CHECK(seq[14].setup.model.name == "llama3.1-405b");
  CHECK(seq[14].setup.seq == 16384);
  for (const SweepRow& r : seq) {
    CHECK(r.setup.precision == Precision::mixed);
    CHECK(r.setup.recompute == Recompute::none);
    CHECK(r.memory.total() == memory_per_rank(r.setup).total());
  }
  CHECK(seq[2].memory.activations == 97ll << 30);  // 8B at 4096: the worked number

  const std::vector<SweepRow> rec = run_sweep(figure_recompute());
  CHECK(rec.size() == 5 * 5 * 3);

  const std::vector<SweepRow> zero = run_sweep(figure_zero());
  REQUIRE(zero.size() == 5 * 4);
  for (std::size_t i = 0; i < zero.size(); i += 4) {  // one sequence length, stages 0..3
    for (std::size_t k = 0; k < 4; ++k) {
      CHECK(zero[i + k].setup.dp == 8);
      CHECK(zero[i + k].setup.zero == static_cast<int>(k));
      CHECK(zero[i + k].memory.activations == zero[i].memory.activations);
      if (k > 0) CHECK(zero[i + k].memory.total() < zero[i + k - 1].memory.total());
    }
  }
  CHECK_THROWS_AS(figure_by_name("nope"), UsageError);
  for (const std::string& name : figure_names()) CHECK_NOTHROW(figure_by_name(name));
}

TEST_CASE("the TP figure: 70B at TP 1, 8, 16 without and with SP; activations from the playbook's formulas",
          "[calc][sweep][tp]") {
  const std::vector<SweepRow> rows = run_sweep(figure_tp());
  const std::int64_t layouts = 5;  // TP 1; TP 8; TP 8 + SP; TP 16; TP 16 + SP
  REQUIRE(rows.size() == 5 * layouts);
  const std::int64_t h = 8192, a = 64, L = 80, b = 1;  // llama3.1-70b
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TrainingSetup& st = rows[i].setup;
    const std::int64_t t = st.tp, s = st.seq;
    INFO("s = " << s << ", t = " << t << (st.sp ? " + SP" : ""));
    const std::size_t k = i % layouts;
    CHECK(s == (std::int64_t{1024} << (i / layouts)));
    CHECK(t == (k == 0 ? 1 : k <= 2 ? 8 : 16));
    CHECK(st.sp == (k == 2 || k == 4));
    CHECK(st.model.name == "llama3.1-70b");
    CHECK(st.precision == Precision::mixed);
    CHECK(st.recompute == Recompute::none);
    CHECK((st.dp == 1 && st.zero == 0 && st.cp == 1 && st.pp == 1));
    // Per layer, 16-bit: TP s·b·h·(10 + 24/t + 5·a·s/(h·t)), TP + SP s·b·h·(34/t + 5·a·s/(h·t));
    // t divides h, so every term is an integer.
    const std::int64_t sbh = s * b * h, scores = 5 * a * s * s * b / t;
    const std::int64_t layer = st.sp ? 34 * sbh / t + scores : 10 * sbh + 24 * sbh / t + scores;
    CHECK(rows[i].memory.activations == L * layer);
    if (st.sp) {  // SP moves activations only: the states are those of TP alone
      const MemoryBreakdown& tp_only = rows[i - 1].memory;
      CHECK(rows[i].memory.parameters == tp_only.parameters);
      CHECK(rows[i].memory.optimizer == tp_only.optimizer);
      CHECK(rows[i].memory.activations < tp_only.activations);
    }
  }
  // t = 16 > 8 kv heads: each rank keeps one kv head (the parameter count checked in
  // test_memory_model.cpp), bf16: 2 bytes each.
  CHECK(rows[3].memory.parameters == 2 * 4'494'729'216);
  CHECK(figure_by_name("tp").layouts.size() == static_cast<std::size_t>(layouts));
}

TEST_CASE("the CP figure: 8B at CP 1, 2, 4, 8, selective and full recomputation; CP divides the activations",
          "[calc][sweep][cp]") {
  const std::vector<SweepRow> rows = run_sweep(figure_cp());
  const std::size_t layouts = 4, modes = 2;  // CP 1, 2, 4, 8 within each recomputation mode
  REQUIRE(rows.size() == 6 * modes * layouts);
  const std::int64_t h = 4096, L = 32, b = 1;  // llama3.1-8b
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TrainingSetup& st = rows[i].setup;
    const std::int64_t c = st.cp, s = st.seq;
    INFO("s = " << s << ", cp = " << c << ", recompute " << recompute_name(st.recompute));
    CHECK(s == (std::int64_t{4096} << (i / (modes * layouts))));
    CHECK(st.recompute == ((i / layouts) % modes == 0 ? Recompute::selective : Recompute::full));
    CHECK(c == (std::int64_t{1} << (i % layouts)));
    CHECK(st.model.name == "llama3.1-8b");
    CHECK((st.dp == 1 && st.tp == 1 && !st.sp && st.pp == 1 && st.precision == Precision::mixed));
    // Per layer, 16-bit, on s/c tokens: selective 34·(s/c)·b·h, full 2·(s/c)·b·h (the layer's input).
    const std::int64_t sbh = s / c * b * h;
    CHECK(rows[i].memory.activations == L * (st.recompute == Recompute::selective ? 34 : 2) * sbh);
    // The states do not depend on c: every rank holds the whole model.
    const MemoryBreakdown& cp1 = rows[i - i % layouts].memory;
    CHECK(rows[i].memory.parameters == cp1.parameters);
    CHECK(rows[i].memory.gradients == cp1.gradients);
    CHECK(rows[i].memory.optimizer == cp1.optimizer);
  }
  CHECK(figure_by_name("cp").layouts.size() == layouts);
}

TEST_CASE("the PP figure: 8B's first stage at PP 1, 2, 4, 8; the states fall by p, the activations do not",
          "[calc][sweep][pp]") {
  const std::vector<SweepRow> rows = run_sweep(figure_pp());
  const std::size_t layouts = 4, modes = 2;  // PP 1, 2, 4, 8 within each recomputation mode
  REQUIRE(rows.size() == 5 * modes * layouts);
  const std::int64_t h = 4096, L = 32, v = 128256, b = 1;  // llama3.1-8b
  const std::int64_t layer = ModelConfig::builtin("llama3.1-8b").params_per_layer();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TrainingSetup& st = rows[i].setup;
    const std::int64_t p = st.pp, s = st.seq;
    INFO("s = " << s << ", pp = " << p << ", recompute " << recompute_name(st.recompute));
    CHECK(p == (std::int64_t{1} << (i % layouts)));
    CHECK(st.recompute == ((i / layouts) % modes == 0 ? Recompute::selective : Recompute::full));
    CHECK((st.dp == 1 && st.tp == 1 && st.cp == 1 && st.precision == Precision::mixed));
    // The first stage: the embedding and L/p layers (plus, at p = 1, the final norm and the head),
    // 2 bytes each in bf16.
    const std::int64_t held = p == 1 ? 2 * v * h + L * layer + h : v * h + L / p * layer;
    CHECK(rows[i].memory.parameters == 2 * held);
    // 1F1B keeps p micro-batches of L/p layers in flight: L layers' activations whatever p is.
    const std::int64_t sbh = s * b * h;
    CHECK(rows[i].memory.activations == L * (st.recompute == Recompute::selective ? 34 : 2) * sbh);
  }
  CHECK(figure_by_name("pp").layouts.size() == layouts);
}

TEST_CASE("the sweep CSV: header, one line per row, values as computed; written to a new folder",
          "[calc][sweep][csv]") {
  const std::vector<SweepRow> rows = run_sweep(figure_zero());
  const std::vector<std::string> lines = lines_of(sweep_csv(rows));
  REQUIRE(lines.size() == rows.size() + 1);
  CHECK(lines[0] ==
        "model,num_parameters,seq,mbs,recompute,precision,dp,zero,tp,sp,cp,pp,"
        "parameters_bytes,gradients_bytes,optimizer_bytes,activations_bytes,total_bytes");
  // 8B, s = 1024, DP 8 with ZeRO-3: 2N/8, 2N/8, 12N/8 and 34·s·h·L + 5·a·s²·L activations.
  const std::int64_t N = 8'030'261'248, act = 34ll * 1024 * 4096 * 32 + 5ll * 32 * 1024 * 1024 * 32;
  std::ostringstream want;
  want << "llama3.1-8b," << N << ",1024,1,none,mixed,8,3,1,0,1,1," << N / 4 << ',' << N / 4 << ',' << 12 * N / 8
       << ',' << act << ',' << 2 * N + act;
  CHECK(lines[4] == want.str());

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("usp_calc_sweep_" + std::to_string(::getpid()));
  const std::string path = (dir / "nested" / "zero_memory.csv").string();
  write_sweep_csv(path, rows);
  std::ifstream f(path);
  std::stringstream got;
  got << f.rdbuf();
  CHECK(got.str() == sweep_csv(rows));
  fs::remove_all(dir);
}
