// The step model's calibration: its constants (StepFit) fitted on the one measured series the
// playbook publishes for it, the 1.34B model's data-parallel scaling on its H100 cluster, and the
// leave-one-out error of that fit (fit on n-1 points, predict the held-out one): an estimate of
// the error on a point the fit did not see, which the error on the fitted points is not.
#pragma once
#include <cstdint>
#include <vector>

#include "chapters/10_5d_parallelism/cluster.hpp"
#include "chapters/10_5d_parallelism/step_model.hpp"

namespace usp::plan {

// One measured run: DP (GPUs), micro-batch, accumulation, measured MFU; TP = PP = 1, ZeRO-0,
// s = 4096, 1,048,576 tokens per step, the 1.34B model.
struct MeasuredPoint {
  std::int64_t dp = 0, mbs = 0, gas = 0;
  double mfu = 0;
};
// The playbook's six points (8 to 256 GPUs).
const std::vector<MeasuredPoint>& playbook_dp_series();
PlanLayout dp_series_layout(const MeasuredPoint& p);

// Which step model is fitted. before: the model without the latency and GEMM-memory terms
// (α = 0, the cluster's HBM bandwidth ignored; 3 constants: compute, bandwidth, overlap);
// after: with them (4 constants, α too). The other new terms (pipeline point to point, ZeRO-3's
// per-layer calls) do not act on this series (pp = 1, ZeRO-0).
enum class ModelTerms { before, after };

// The constants minimising the sum of squared relative MFU errors over `points` (Nelder-Mead on
// their logarithms, the overlap in [0, 1]; starts from the shipped constants).
StepFit fit_step_model(const std::vector<MeasuredPoint>& points, const Cluster& cluster, ModelTerms terms);

// For each point: the MFU predicted by the model fitted on all the others.
std::vector<double> leave_one_out(const std::vector<MeasuredPoint>& points, const Cluster& cluster, ModelTerms terms);

// The cluster as the `terms` model sees it (before: no HBM bandwidth) and the MFU it predicts.
double predicted_mfu(const MeasuredPoint& p, const Cluster& cluster, const StepFit& fit, ModelTerms terms);

}  // namespace usp::plan
