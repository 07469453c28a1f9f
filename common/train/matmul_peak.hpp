// What MFU is measured against: the rate this device's matrix products reach, measured here.
// A square product y = x·wᵀ of n = 1024 (ops::matmul_forward: OpenBLAS sgemm on one CPU thread,
// cuBLAS bf16 on the tensor cores of a GPU), the fastest of kPeakRuns after a warm-up
// (run_times_ms), in FLOP/s. A spec sheet's number is the ceiling of a chip nobody shares; this is
// what the course's own kernels can get on this machine now, so an MFU of 80 % means the step
// spends most of its time in matmuls. The fastest run, not the median: a peak is what the device
// reaches, and on a shared machine other work only ever slows a run down, so a median taken at a
// busy moment is a low peak and makes MFUs above 100 % (step_progress.hpp marks any that still
// come out so). 0.14-0.3 s on one core of the course machine (8 products of 16-35 ms).
// Its three scratch matrices stay out of the memory tracker's peaks (MemoryTracker::Unmeasured).
#pragma once
#include "common/device.hpp"

namespace usp {

constexpr int kPeakRuns = 7;

double matmul_peak_flops(Device device);

}  // namespace usp
