// The single-rank baseline every parallel chapter is checked against (docs/ARCHITECTURE.md,
// principle 1), written independently of any trainer: one ParamStore, the step's global batch
// of `micro_batches` micro-batches in order (micro-batch i = samples [i·mbs, (i+1)·mbs); data-
// parallel rank r's j-th of k is i = r·k + j), each backward scaled by 1/micro_batches, one
// AdamW step.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/report/row_gather.hpp"
#include "common/train/training_flags.hpp"
#include "common/train/training_summary.hpp"

namespace usp::testing {

// One training run's observables.
struct Run {
  std::vector<double> losses;   // mean over the global batch, per step
  std::vector<float> grad0;     // the averaged gradient the first step used
  std::vector<float> min_grad;  // baseline: per element, the smallest |gradient| over the steps
  std::vector<float> params;    // the final parameters (the single-device flat layout)
  int max_units_held = 0;
};

inline Run baseline(const TrainingConfig& cfg, const Dataset& data, std::int64_t micro_batches) {
  ParamStore p(cfg.model, cfg.dtype);
  p.init(cfg.seed);
  Model m(p, cfg.model_options());
  AdamW opt(p, cfg.adamw);
  Run run;
  const std::int64_t n = micro_batches;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    p.zero_grad();
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const Batch b = data.batch(step, i * cfg.mbs, cfg.mbs, cfg.seq);
      sum += m.forward(b.inputs, b.targets);
      m.backward(1.0f / static_cast<float>(n));
    }
    const std::vector<float> g = p.flat_grad().to_floats();
    if (step == 0) run.grad0 = g, run.min_grad.assign(g.size(), INFINITY);
    for (std::size_t e = 0; e < g.size(); ++e) run.min_grad[e] = std::min(run.min_grad[e], std::fabs(g[e]));
    opt.step(p);
    run.losses.push_back(sum / static_cast<double>(n));
  }
  run.params = p.flat().to_floats();
  return run;
}

// The mean over the ranks of each rank's double, exactly as sent (no fp32 rounding on the way).
inline double mean_over_ranks(Communicator& comm, double local) {
  const std::vector<double> all = report::gather_rows(comm, local);
  double sum = 0;
  for (double v : all) sum += v;
  return sum / static_cast<double>(all.size());
}

}  // namespace usp::testing
