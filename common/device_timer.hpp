// Wall-clock timing of work on a device. The device is synchronised before each run and after
// it, so GPU work is timed to its end rather than to its launch (on the CPU nothing waits).
#pragma once
#include <functional>
#include <vector>

#include "common/device.hpp"

namespace usp {

// The times of `reps` runs of run() (at least one), in milliseconds, in run order; reset(), when
// given, runs before each, untimed (to put inputs back to their starting values).
std::vector<double> run_times_ms(const std::function<void()>& run, int reps, Device device = Device::cpu(),
                                 const std::function<void()>& reset = {});
// Their median (report/median.hpp): what a timing table reports.
double median_ms(const std::function<void()>& run, int reps, Device device = Device::cpu(),
                 const std::function<void()>& reset = {});

}  // namespace usp
