// The planner (common/plan): its step model against the playbook's data-parallel scaling series
// of the 1.34B model (the calibration set: the fitted constants must reproduce it), every layout
// it proposes fits in memory by usp_calc's own model, the search over the playbook's campaign
// (4 models × 7 node counts) finds a layout for each where one fits, cluster files, bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/calc/memory_model.hpp"
#include "common/error.hpp"
#include "common/plan/planner.hpp"

using namespace usp;
using namespace usp::plan;

namespace {

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
    // The three constants were fitted to these six points (max relative error 3.6%); a model
    // that drifts from what was fitted (a term dropped, a bandwidth taken at the wrong node
    // count) misses by more than 5%. The issue's bar is 15%.
    CHECK(std::fabs(mfu(l, cl) - p.mfu) <= 0.05 * p.mfu);
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
        CHECK(p.memory_bytes == calc::memory_per_rank(p.layout.setup).total());
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
  std::ofstream(file) << R"({"gpus_per_node": 8, "peak_tflops": 191.5})";
  CHECK_THROWS_AS(Cluster::from_file(file), UsageError);
  CHECK_THROWS_WITH(search_layouts(PlanRequest{ModelConfig::builtin("playbook-1.34b"), 0}, c), Catch::Contains("--nodes must be >= 1"));
  CHECK_THROWS_WITH(search_layouts(PlanRequest{ModelConfig::builtin("playbook-1.34b"), 1, 4096, 1000}, c),
                    Catch::Contains("must be a multiple of --seq"));
  CHECK_THROWS_WITH(ModelConfig::builtin("playbook-2b"), Catch::Contains("unknown model 'playbook-2b'"));
  std::filesystem::remove_all(dir);
}
