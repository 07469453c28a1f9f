// Where a tensor lives: the CPU or one CUDA device.
#pragma once
#include <string>

namespace usp {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {DeviceKind::cuda, i}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  bool operator==(const Device&) const = default;
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

// True when this build has CUDA paths compiled in (USP_HAVE_CUDA).
bool cuda_compiled();
// Number of CUDA devices visible now (0 when none, or when CUDA is not compiled in).
int cuda_device_count();
// Parses "cpu", "cuda", "cuda:N" or "auto" (cuda:local_rank % count if a GPU is visible, else
// cpu); throws UsageError for anything else, or for cuda when no device is visible.
Device parse_device(const std::string& text, int local_rank = 0);
// Waits until the work queued on `device` has finished (nothing to wait for on the CPU): a
// wall-clock time around GPU work means something only after it.
void synchronize(Device device);
// Waits for the work queued on `device`'s compute stream only, not the communicators' streams: an
// asynchronous send still waiting for its receiver would turn a whole-device wait into a deadlock.
void synchronize_compute(Device device);

}  // namespace usp
