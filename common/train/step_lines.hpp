// The progress line (step_progress.hpp) of a training loop on one device that is no
// variant_runner.hpp variant (chapters 12-14's small trainings), printed as each step ends:
//
//   "  flash: step    3  loss 5.2012  dt 41.3 ms  tok/s 12,345  mfu 31.0%"
//
//   const StepLines lines = step_lines_from(cli, cfg.device);  // --quiet; the peak measured once
//   for each step: start = now; ...the step...; lines.print("flash", step, loss, tokens, model.flops().model(), start)
//
// print synchronises the device first (queued GPU work belongs to the step's time). The default
// StepLines prints nothing (a caller without the flag, e.g. a test).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "common/cli.hpp"
#include "common/device.hpp"

namespace usp {

struct StepLines {
  bool quiet = true;
  double peak_flops = 0;  // matmul_peak.hpp's rate of this device; 0: no MFU
  Device device = Device::cpu();

  // "  <label>: " and the line of the step that began at `start`: its tokens and model FLOPs.
  void print(const std::string& label, std::int64_t step, double loss, std::int64_t tokens, double flops,
             std::chrono::steady_clock::time_point start) const;
};

// The --quiet flag (no line per step), and StepLines from it: unless quiet, the peak is measured
// here (matmul_peak_flops on `device`).
void add_step_lines_flag(Cli& cli);
StepLines step_lines_from(const Cli& cli, Device device);

}  // namespace usp
