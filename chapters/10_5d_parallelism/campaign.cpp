#include "chapters/10_5d_parallelism/campaign.hpp"

#include <cstdio>
#include <sstream>

namespace usp::ch10 {

std::vector<CampaignCell> run_campaign(const std::vector<std::string>& models, const std::vector<int>& nodes,
                                       const plan::Cluster& cluster) {
  std::vector<CampaignCell> cells;
  for (const std::string& m : models)
    for (int n : nodes) {
      const std::vector<plan::PlannedLayout> all = plan::search_layouts({ModelConfig::builtin(m), n}, cluster);
      CampaignCell c{m, n, all.size(), {}};
      if (!all.empty()) c.best = all.front();
      cells.push_back(c);
    }
  return cells;
}

std::vector<CalibrationPoint> calibration_series(const plan::Cluster& cluster) {
  // The playbook's measurements: DP (GPUs), MBS, GAS, MFU; TP = PP = 1, ZeRO-0, s = 4096.
  const CalibrationPoint measured[] = {{8, 2, 16, 0.392, 0},  {16, 1, 16, 0.367, 0}, {32, 1, 8, 0.345, 0},
                                       {64, 1, 4, 0.304, 0},  {128, 2, 1, 0.258, 0}, {256, 1, 1, 0.153, 0}};
  std::vector<CalibrationPoint> out;
  for (CalibrationPoint p : measured) {
    plan::PlanLayout l;
    l.setup.model = ModelConfig::builtin("playbook-1.34b");
    l.setup.seq = 4096;
    l.setup.dp = p.dp;
    l.setup.mbs = p.mbs;
    l.gas = p.gas;
    p.predicted = plan::mfu(l, cluster);
    out.push_back(p);
  }
  return out;
}

std::string campaign_csv(const std::vector<CampaignCell>& cells) {
  std::ostringstream csv;
  csv.precision(9);
  csv << "model,nodes,fitting,dp,tp,pp,cp,zero,mbs,gas,recompute,schedule,memory_bytes,step_seconds,"
         "tokens_per_second_per_gpu,mfu\n";
  for (const CampaignCell& c : cells) {
    csv << c.model << ',' << c.nodes << ',' << c.fitting;
    if (c.fitting == 0) {
      csv << ",,,,,,,,,,,,,\n";
      continue;
    }
    const calc::TrainingSetup& s = c.best.layout.setup;
    csv << ',' << s.dp << ',' << s.tp << ',' << s.pp << ',' << s.cp << ',' << s.zero << ',' << s.mbs << ',' << c.best.layout.gas << ','
        << recompute_name(s.recompute) << ',' << c.best.layout.schedule() << ',' << c.best.memory_bytes << ','
        << c.best.time.total() << ',' << c.best.tokens_per_second_per_gpu << ',' << c.best.mfu << '\n';
  }
  return csv.str();
}

std::string calibration_csv(const std::vector<CalibrationPoint>& points) {
  std::ostringstream csv;
  csv.precision(9);
  csv << "dp,mbs,gas,measured_mfu,predicted_mfu\n";
  for (const CalibrationPoint& p : points)
    csv << p.dp << ',' << p.mbs << ',' << p.gas << ',' << p.measured << ',' << p.predicted << '\n';
  return csv.str();
}

void print_calibration(const std::vector<CalibrationPoint>& cal) {
  std::printf("\n2. Calibration: the playbook's DP scaling of the 1.34B model (TP = PP = 1, ZeRO-0, s = 4096, 1M\n"
              "   tokens per step) against the step model (compute at %.0f%% of peak, collectives at %.0f%% of the\n"
              "   measured bus bandwidth, %.0f%% of the last backward hiding the all-reduce)\n",
              100 * plan::kComputeEfficiency, 100 * plan::kBandwidthEfficiency, 100 * plan::kOverlap);
  std::printf("   %5s %4s %4s   %8s %9s %7s\n", "DP", "MBS", "GAS", "measured", "predicted", "error");
  for (const CalibrationPoint& p : cal)
    std::printf("   %5lld %4lld %4lld   %7.1f%% %8.1f%% %+6.1f%%\n", static_cast<long long>(p.dp),
                static_cast<long long>(p.mbs), static_cast<long long>(p.gas), 100 * p.measured, 100 * p.predicted,
                100 * (p.predicted - p.measured) / p.measured);

}

void print_campaign(const std::vector<CampaignCell>& cells, const plan::Cluster& cluster, double seconds) {
  std::printf("\n3. The campaign: the best layout per model and node count (%s; searched in %.3f s)\n",
              cluster.name.c_str(), seconds);
  std::printf("   %-15s %5s | %3s %3s %3s %3s %4s %3s %4s %-9s %-5s | %6s %7s\n", "model", "nodes", "dp", "tp", "pp",
              "cp", "zero", "mbs", "gas", "recompute", "sched", "MFU", "mem GB");
  for (const CampaignCell& c : cells) {
    if (c.fitting == 0) {
      std::printf("   %-15s %5d | nothing fits\n", c.model.c_str(), c.nodes);
      continue;
    }
    const calc::TrainingSetup& s = c.best.layout.setup;
    std::printf("   %-15s %5d | %3lld %3lld %3lld %3lld %4d %3lld %4lld %-9s %-5s | %5.1f%% %7.1f\n", c.model.c_str(),
                c.nodes, static_cast<long long>(s.dp), static_cast<long long>(s.tp), static_cast<long long>(s.pp),
                static_cast<long long>(s.cp), s.zero, static_cast<long long>(s.mbs),
                static_cast<long long>(c.best.layout.gas), recompute_name(s.recompute), c.best.layout.schedule().c_str(),
                100 * c.best.mfu, static_cast<double>(c.best.memory_bytes) / 1e9);
  }
}

}  // namespace usp::ch10
