// The playbook's benchmark campaign, replayed by the planner (planner.hpp): for each of its four
// models and each node count, the layout the planner predicts best (the best-configuration
// heatmap), and the planner's calibration series next to what the playbook measured.
#pragma once
#include <string>
#include <vector>

#include "chapters/10_5d_parallelism/planner.hpp"
#include "common/report/table.hpp"

namespace usp::ch10 {

struct CampaignCell {
  std::string model;
  int nodes = 0;
  std::size_t fitting = 0;   // layouts that fit in memory
  plan::PlannedLayout best;  // valid when fitting > 0
  // plan::tied_with_best of the cell's layouts: how many predict an MFU within the step model's
  // own error (kModelError) of the best, the best included. > 1: a tie the model cannot break.
  std::size_t tied = 0;
  // How many distinct meshes (tp, pp, cp; dp follows) those tied layouts have: 1 when they differ
  // only in ZeRO, micro-batch, recomputation or schedule, so that the mesh itself is not in doubt.
  std::size_t tied_meshes = 0;
};

// models × nodes, models outermost.
std::vector<CampaignCell> run_campaign(const std::vector<std::string>& models, const std::vector<int>& nodes,
                                       const plan::Cluster& cluster);

// The playbook's DP-scaling series of the 1.34B model (the planner's calibration set,
// plan::playbook_dp_series): measured MFU, the shipped model's prediction, and the leave-one-out
// predictions (the model fitted on the other points) without and with the latency and
// GEMM-memory terms (calibration.hpp).
struct CalibrationPoint {
  std::int64_t dp = 0, mbs = 0, gas = 0;
  double measured = 0, predicted = 0, loo_before = 0, loo_after = 0;
};
std::vector<CalibrationPoint> calibration_series(const plan::Cluster& cluster);

// One row per cell. CSV (campaign.csv): model,nodes,fitting,dp,tp,pp,cp,zero,mbs,gas,recompute,
// schedule,memory_bytes,step_seconds,tokens_per_second_per_gpu,mfu,tied_with_best,tied_meshes
// (empty layout fields where nothing fits); terminal: the best layout, its MFU and memory, the tie
// counts.
report::Table campaign_table(const std::vector<CampaignCell>& cells);
// One row per point. CSV (calibration.csv): dp,mbs,gas,measured_mfu,predicted_mfu,loo_before_mfu,
// loo_after_mfu; terminal: the measured and predicted MFUs and the error in percent.
report::Table calibration_table(const std::vector<CalibrationPoint>& points);

// The leave-one-out errors, |predicted - measured| / measured per point: median and largest.
struct LooError {
  double median = 0, largest = 0;
};
LooError loo_error(const std::vector<CalibrationPoint>& points, bool after);

// The tables the chapter prints (stdout) under their titles: measured vs predicted MFU per
// calibration point and the leave-one-out error before and after the new terms, and the best layout of each campaign cell (searched in `seconds`), with how
// many cells are ties.
void print_calibration(const std::vector<CalibrationPoint>& cal);
void print_campaign(const std::vector<CampaignCell>& cells, const plan::Cluster& cluster, double seconds);

}  // namespace usp::ch10
