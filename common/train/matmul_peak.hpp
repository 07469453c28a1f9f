// What MFU is measured against: the rate this device's matrix products reach, measured here.
// A square product y = x·wᵀ of n = 1024 (ops::matmul_forward: OpenBLAS sgemm on one CPU thread,
// cuBLAS bf16 on the tensor cores of a GPU), the median of 5 after a warm-up (median_ms), in FLOP/s. A spec
// sheet's number is the ceiling of a chip nobody shares; this is what the course's own kernels can
// get on this machine now, so an MFU of 80 % means the step spends most of its time in matmuls.
// Its three scratch matrices stay out of the memory tracker's peaks (MemoryTracker::Unmeasured).
#pragma once
#include "common/device.hpp"

namespace usp {

double matmul_peak_flops(Device device);

}  // namespace usp
