#include "common/device_timer.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/report/median.hpp"

namespace usp {

std::vector<double> run_times_ms(const std::function<void()>& run, int reps, Device device,
                                 const std::function<void()>& reset) {
  std::vector<double> ms;
  for (int r = 0; r < std::max(1, reps); ++r) {
    if (reset) reset();
    synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    run();
    synchronize(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

double median_ms(const std::function<void()>& run, int reps, Device device, const std::function<void()>& reset) {
  return report::median(run_times_ms(run, reps, device, reset));
}

}  // namespace usp
