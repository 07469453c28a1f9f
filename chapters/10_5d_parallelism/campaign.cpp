#include "chapters/10_5d_parallelism/campaign.hpp"

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
  csv << "model,nodes,fitting,dp,tp,pp,zero,mbs,gas,recompute,schedule,memory_bytes,step_seconds,"
         "tokens_per_second_per_gpu,mfu\n";
  for (const CampaignCell& c : cells) {
    csv << c.model << ',' << c.nodes << ',' << c.fitting;
    if (c.fitting == 0) {
      csv << ",,,,,,,,,,,,\n";
      continue;
    }
    const calc::TrainingSetup& s = c.best.layout.setup;
    csv << ',' << s.dp << ',' << s.tp << ',' << s.pp << ',' << s.zero << ',' << s.mbs << ',' << c.best.layout.gas << ','
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

}  // namespace usp::ch10
