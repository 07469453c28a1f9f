// Where a tensor lives: the CPU or one CUDA device, or the emulated device.
//
// The emulated device, cpu:1, is host memory under a second device's name. Ops compute on it with
// the CPU's code (is_cpu() is true: its memory is the host's), but it is not Device::cpu(): an op
// whose arguments mix it with cpu tensors, or a communicator handed a tensor from the other one,
// fails its device check exactly as a GPU run would. A run with --device cpu:1 is therefore a
// GPU run's placement check on a machine without a GPU: a temporary allocated on the default
// device (Tensor::empty without a device), a host copy fed to a device op, a host tensor handed
// to the device communicator all stop it with their message. Its ranks talk through the
// host-staged communicator, the backend of ranks that share a GPU.
#pragma once
#include <string>

namespace usp {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {DeviceKind::cuda, i}; }
  static Device emulated() { return {DeviceKind::cpu, 1}; }  // cpu:1, see above
  bool is_cpu() const { return kind == DeviceKind::cpu; }  // host memory: cpu or the emulated device
  bool is_emulated() const { return kind == DeviceKind::cpu && index != 0; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  bool operator==(const Device&) const = default;
  std::string str() const {
    return is_cuda() ? "cuda:" + std::to_string(index) : is_emulated() ? "cpu:" + std::to_string(index) : "cpu";
  }
};

// True when this build has CUDA paths compiled in (USP_HAVE_CUDA).
bool cuda_compiled();
// Number of CUDA devices visible now (0 when none, or when CUDA is not compiled in).
int cuda_device_count();
// Parses "cpu", "cuda", "cuda:N", "cpu:1" (the emulated device) or "auto" (cuda:local_rank %
// count if a GPU is visible, else cpu); throws UsageError for anything else, or for cuda when no
// device is visible.
Device parse_device(const std::string& text, int local_rank = 0);
// Waits until the work queued on `device` has finished (nothing to wait for on the CPU): a
// wall-clock time around GPU work means something only after it.
void synchronize(Device device);
// Waits for the work queued on `device`'s compute stream only, not the communicators' streams: an
// asynchronous send still waiting for its receiver would turn a whole-device wait into a deadlock.
void synchronize_compute(Device device);

}  // namespace usp
