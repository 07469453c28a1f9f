// Timing GPU work with CUDA events, the way the runner reports it.
//
// A kernel launch returns before the kernel runs, so a host clock around the launch measures
// almost nothing. An event is a marker in the stream that the GPU timestamps when it gets
// there; two events around a launch bracket the kernel's own time. The first runs pay for
// things a steady state does not (module loading, cold caches, clocks ramping up): they are
// run untimed. Each timed run gets its own pair of events, and the median of the runs is
// reported — robust to the occasional run that another process or a clock change slowed down.
// Defined only when the build has CUDA.
#pragma once
#include <functional>
#include <vector>

namespace usp::ch11 {

// Runs launch() warmup times untimed, then iters times between events on the compute stream;
// returns the iters durations in milliseconds (in run order).
std::vector<double> time_launches(const std::function<void()>& launch, int warmup, int iters);

}  // namespace usp::ch11
