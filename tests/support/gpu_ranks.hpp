// What the [gpu][mpi] training cases share: this rank's GPU and a communicator for CUDA tensors
// over the job (Runtime::make_world: NCCL with a GPU per rank, MPI through host memory when ranks
// share one), and the bound a training run on GPUs keeps from the CPU baseline.
//
// device_ranks() is gpu_ranks() that never skips: without a GPU it hands out the emulated device
// (cpu:1, common/device.hpp), host memory under another device's name, talking host-staged as
// ranks sharing a GPU do. A case written against it runs on every machine: on a GPU it checks the
// GPU's arithmetic, and everywhere it checks that every tensor of the run follows the run's
// device (a buffer left on the default device, cpu, fails its op's or communicator's device
// check as on a GPU). Cases that call CUDA-only code keep gpu_ranks().
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/device.hpp"
#include "common/train/training_flags.hpp"
#include "tests/support/test_world.hpp"

namespace usp::testing {

struct GpuRanks {
  Device device;                         // local rank modulo the visible GPUs
  std::unique_ptr<Communicator> tensors;  // the job's ranks, for tensors on `device`

  TrainingConfig on_gpu(TrainingConfig cfg) const {  // the same training, on this rank's GPU
    cfg.device = device;
    return cfg;
  }
  std::string where() const { return device.str() + " over " + tensors->backend(); }
};

// Nothing, with a warning that the case is skipped, when no GPU is visible: every rank of a job
// on one machine sees the same GPUs, so every rank skips or none does (collective otherwise).
inline std::optional<GpuRanks> gpu_ranks() {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return std::nullopt;
  }
  Runtime& rt = runtime();
  const Device device = Device::cuda(rt.local_rank() % cuda_device_count());
  return GpuRanks{device, rt.make_world(device)};
}

inline GpuRanks device_ranks() {
  Runtime& rt = runtime();
  const Device device =
      cuda_device_count() > 0 ? Device::cuda(rt.local_rank() % cuda_device_count()) : Device::emulated();
  return GpuRanks{device, rt.make_world(device)};
}

// Each step's loss on GPUs against the CPU baseline's. CPU vs CUDA: fp32 in other summation orders
// (cuBLAS vs OpenBLAS, the kernels' block reductions, NCCL's rings), a few ulps per op that
// AdamW's normalised steps keep from growing over a few steps: 1e-5 of the loss
// (tests/model/test_model_cuda.cpp).
inline void check_losses_follow(const std::vector<double>& got, const std::vector<double>& base) {
  REQUIRE(got.size() <= base.size());
  for (std::size_t s = 0; s < got.size(); ++s) {
    INFO("step " << s << ": loss " << got[s] << ", CPU baseline " << base[s]);
    CHECK(std::fabs(got[s] - base[s]) <= 1e-5 * base[s]);
  }
}

}  // namespace usp::testing
