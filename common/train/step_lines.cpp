#include "common/train/step_lines.hpp"

#include "common/train/matmul_peak.hpp"
#include "common/train/step_progress.hpp"

namespace usp {

void StepLines::print(const std::string& label, std::int64_t step, double loss, std::int64_t tokens, double flops,
                      std::chrono::steady_clock::time_point start) const {
  if (quiet) return;
  synchronize(device);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const StepProgress line{step, loss, seconds, tokens, 1, flops, peak_flops};
  print_progress_line("  " + label + ": ", line);
}

void add_step_lines_flag(Cli& cli) { cli.add_flag("quiet", "no line per training step (tables and summary.json only)"); }

StepLines step_lines_from(const Cli& cli, Device device) {
  StepLines lines{.quiet = cli.get_flag("quiet"), .peak_flops = 0, .device = device};
  if (!lines.quiet) lines.peak_flops = matmul_peak_flops(device);
  return lines;
}

}  // namespace usp
