// The communicators of a parallel chapter's training (chapters 04-10), made in one place:
//
//   metrics  a second communicator of the world's ranks, for everything that is not a variant's
//            own traffic (losses, traces, gathered reports, comparisons), so that the trainer's
//            groups count exactly what the variants communicate;
//   tensors  what the trainers' meshes split into their groups: the CPU world itself on CPU ranks;
//            on GPUs (and the emulated device) a communicator for device tensors: NCCL with a GPU
//            per rank, MPI through host memory when ranks share one (--backend;
//            Runtime::device_world), beside the world that still carries the CPU-side summaries.
//
// Collective over the world; a backend that cannot serve the device is a UsageError said once.
#pragma once
#include <memory>

#include "common/comm/communicator.hpp"
#include "common/runtime.hpp"
#include "common/train/training_flags.hpp"

namespace usp {

class TrainingComms {
 public:
  TrainingComms(Runtime& rt, const TrainingConfig& cfg);

  Communicator& metrics() { return *metrics_; }
  Communicator& tensors() { return device_ ? *device_ : world_; }
  // The device communicator's counters (what the trainers sent on a GPU), or null on CPU ranks,
  // where the world's own counters hold them (write_training_summary's `comm`).
  const CommStats* device_stats() const { return device_ ? &device_->stats() : nullptr; }

 private:
  Communicator& world_;
  std::unique_ptr<Communicator> metrics_;
  std::unique_ptr<Communicator> device_;
};

// Error unless a trainer's world carries its tensors on the model's device: a model on a GPU needs
// tensors() (a device communicator), not the CPU world. `trainer` names the trainer in the message.
void check_world_device(const char* trainer, const Communicator& world, Device model_device);

}  // namespace usp
