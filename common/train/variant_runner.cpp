// The parallel chapters' step loop (see variant_runner.hpp).
#include "common/train/variant_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/calc/flops_model.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/report/median.hpp"
#include "common/report/row_gather.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/matmul_peak.hpp"

namespace usp {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The mean over comm's ranks of every rank's `local`, in rank order, in double; a non-finite
// mean is a fatal error that every rank throws with the same line (said once).
double mean_over_ranks(Communicator& comm, double local, std::int64_t step, const std::string& quantity,
                       const std::string& run) {
  const std::vector<double> all = report::gather_rows(comm, local);
  double sum = 0;
  for (double v : all) sum += v;
  const double mean = sum / static_cast<double>(all.size());
  if (!std::isfinite(mean)) {
    // The first rank whose own value is not finite; none: each is, and only their sum overflows.
    const std::int64_t rank = first_non_finite(all);
    const std::string where = rank >= 0 ? " on rank " + std::to_string(rank)
                                        : " (the mean over the ranks; each rank's own is finite)";
    require_finite_loss(mean, step, quantity, run, where);
  }
  return mean;
}

// matmul_peak_flops, measured once per process and device (a chapter may make a runner per layout).
double peak_flops(Device device) {
  static std::string measured_on;
  static double peak = 0;
  if (measured_on != device.str()) {
    peak = matmul_peak_flops(device);
    measured_on = device.str();
  }
  return peak;
}

}  // namespace

double VariantRun::median_step_seconds() const { return report::median(step_seconds); }

VariantRunner::VariantRunner(Communicator& metrics, RunnerSettings settings)
    : metrics_(metrics), settings_(std::move(settings)) {
  const calc::FlopsEstimate f = calc::flops_per_step(calc_setup(settings_.config));
  // The model FLOPs of one token (the estimate's tokens are one micro-batch), times the step's.
  flops_per_step_ = f.model / static_cast<double>(f.tokens) * static_cast<double>(settings_.tokens_per_step);
  if (!settings_.progress.quiet) {
    // Every rank measures at the same time, so the rate is what one rank's products reach while
    // all ranks compute, as in the steps (on cores the ranks share, a share of one core): measured
    // by rank 0 alone while the others wait, it is too high or too low with the waiting ranks'
    // polling, and MFU can pass 100 %. The mean over the ranks.
    metrics_.barrier();
    const std::vector<double> all = report::gather_rows(metrics_, peak_flops(settings_.config.device));
    for (double p : all) peak_flops_ += p / static_cast<double>(all.size());
  }
}

VariantRun VariantRunner::run(const TrainingVariant& v) {
  const TrainingConfig& cfg = settings_.config;
  const ProgressFlags& progress = settings_.progress;
  USP_CHECK(v.step, "VariantRunner::run: variant '" + v.name + "' has no step function");
  Tracer& tracer = Tracer::instance();
  VariantRun r;
  r.name = v.name;
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t first_traced =
      v.trace_name.empty() ? cfg.steps : cfg.steps - std::clamp<std::int64_t>(v.traced_steps, 1, cfg.steps);
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const bool traced = step >= first_traced;
    if (step == first_traced) {
      tracer.clear();
      tracer.align(metrics_);
    }
    if (traced) tracer.enable(true);
    const auto ts = std::chrono::steady_clock::now();
    const double local = v.step(step);
    r.step_seconds.push_back(seconds_since(ts));
    if (traced) {
      tracer.enable(false);
      if (v.traced_step && step + 1 == cfg.steps) v.traced_step(tracer.spans());
    }
    if (v.after_step) v.after_step(step);
    r.losses.push_back(mean_over_ranks(metrics_, local, step, "loss", v.name));
    StepProgress line{step, r.losses.back(), r.step_seconds.back(), settings_.tokens_per_step,
                      metrics_.size(), flops_per_step_, peak_flops_};
    if (v.validation && progress.evaluates(step, cfg.steps)) {
      line.val_loss = v.validation(step);
      require_finite_loss(line.val_loss, step, "validation loss", v.name);
      r.val_steps.push_back(step);
      r.val_losses.push_back(line.val_loss);
    }
    if (!progress.quiet && metrics_.rank() == 0) print_progress_line("  " + v.name + ": ", line);
  }
  synchronize(cfg.device);
  r.seconds = seconds_since(t0);
  if (v.after_steps) v.after_steps();
  if (!v.trace_name.empty()) write_trace(metrics_, settings_.trace_dir, v.trace_name);
  runs_.push_back(r);
  return r;
}

LossAgreement VariantRunner::agreement() const {
  std::vector<std::vector<double>> losses;
  for (const VariantRun& r : runs_) losses.push_back(r.losses);
  return compare_losses(losses, settings_.config.dtype);
}

}  // namespace usp
