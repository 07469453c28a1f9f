// ch10_5d_parallelism: the playbook's "5D parallelism in a nutshell" and "Finding the best
// configuration" — so far the planner's half (the one trainer for every layout is to come).
//
//   1. The planner's calibration: the playbook's DP-scaling series of the 1.34B model, measured
//      MFU next to what the step model predicts with its three fitted constants.
//   2. The campaign: for the playbook's four models (1.34B, 3.57B, 8.86B, 80B) on 1-64 nodes of 8
//      H100, the best layout the planner finds (plots/ch10_best_config.py draws the heatmap),
//      and the search's time.
// Writes <out>/summary.json, calibration.csv and campaign.csv.
//
//   build/bin/ch10_5d_parallelism [--cluster FILE]          (then: usp_plan --model M --nodes N)
#include <chrono>
#include <cstdio>
#include <iostream>

#include "chapters/10_5d_parallelism/campaign.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"

namespace {

using namespace usp;
using namespace usp::ch10;

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch10_5d_parallelism",
          "the cluster planner on the playbook's campaign: the best layout of 4 models on 1-64 nodes, and its "
          "calibration against the measured DP scaling");
  cli.add_common("out/10_5d_parallelism");
  cli.add_string("cluster", "", "a JSON cluster file instead of the playbook's H100 cluster");
  if (!rt.parse(cli, argc, argv)) return 0;
  const std::string out = cli.get_string("out");
  plan::Cluster cluster = plan::Cluster::playbook();
  rt.agree([&] {
    if (cli.given("cluster")) cluster = plan::Cluster::from_file(cli.get_string("cluster"));
  });
  if (!rt.is_root()) return 0;  // the planner is arithmetic: one process
  make_dirs(out);

  const std::vector<CalibrationPoint> cal = calibration_series(cluster);
  std::printf("1. Calibration: the playbook's DP scaling of the 1.34B model (TP = PP = 1, ZeRO-0, s = 4096, 1M\n"
              "   tokens per step) against the step model (compute at %.0f%% of peak, collectives at %.0f%% of the\n"
              "   measured bus bandwidth, %.0f%% of the last backward hiding the all-reduce)\n",
              100 * plan::kComputeEfficiency, 100 * plan::kBandwidthEfficiency, 100 * plan::kOverlap);
  std::printf("   %5s %4s %4s   %8s %9s %7s\n", "DP", "MBS", "GAS", "measured", "predicted", "error");
  for (const CalibrationPoint& p : cal)
    std::printf("   %5lld %4lld %4lld   %7.1f%% %8.1f%% %+6.1f%%\n", static_cast<long long>(p.dp),
                static_cast<long long>(p.mbs), static_cast<long long>(p.gas), 100 * p.measured, 100 * p.predicted,
                100 * (p.predicted - p.measured) / p.measured);

  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<CampaignCell> cells = run_campaign(
      {"playbook-1.34b", "playbook-3.57b", "playbook-8.86b", "playbook-80b"}, {1, 2, 4, 8, 16, 32, 64}, cluster);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\n2. The campaign: the best layout per model and node count (%s; searched in %.3f s)\n",
              cluster.name.c_str(), seconds);
  std::printf("   %-15s %5s | %3s %3s %3s %4s %3s %4s %-9s | %6s %7s\n", "model", "nodes", "dp", "tp", "pp", "zero", "mbs",
              "gas", "recompute", "MFU", "mem GB");
  for (const CampaignCell& c : cells) {
    if (c.fitting == 0) {
      std::printf("   %-15s %5d | nothing fits\n", c.model.c_str(), c.nodes);
      continue;
    }
    const calc::TrainingSetup& s = c.best.layout.setup;
    std::printf("   %-15s %5d | %3lld %3lld %3lld %4d %3lld %4lld %-9s | %5.1f%% %7.1f\n", c.model.c_str(), c.nodes,
                static_cast<long long>(s.dp), static_cast<long long>(s.tp), static_cast<long long>(s.pp), s.zero,
                static_cast<long long>(s.mbs), static_cast<long long>(c.best.layout.gas), recompute_name(s.recompute),
                100 * c.best.mfu, static_cast<double>(c.best.memory_bytes) / 1e9);
  }
  write_file_atomic(out + "/calibration.csv", calibration_csv(cal));
  write_file_atomic(out + "/campaign.csv", campaign_csv(cells));
  JsonWriter j;
  j.begin_object().key("flags").raw(cli.values_json()).field("cluster", cluster.name);
  j.field("search_seconds", seconds).field("cells", cells.size()).end_object();
  j.write_file(out + "/summary.json");
  std::printf("\nwrote %s/summary.json, calibration.csv, campaign.csv\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
