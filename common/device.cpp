#include "common/device.hpp"

#include "common/cuda_support.hpp"
#include "common/error.hpp"

namespace usp {

bool cuda_compiled() {
#if defined(USP_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

int cuda_device_count() { return cuda::device_count(); }

Device parse_device(const std::string& text, int local_rank) {
  if (text == "cpu") return Device::cpu();
  if (text == "cpu:1") return Device::emulated();
  if (text == "auto") {
    const int n = cuda_device_count();
    return n > 0 ? Device::cuda(local_rank % n) : Device::cpu();
  }
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    if (!cuda_compiled())
      throw UsageError("--device " + text + ": this build has no CUDA (configure with nvcc "
                       "available, or use --device cpu)");
    const int n = cuda_device_count();
    if (n == 0) throw UsageError("--device " + text + ": no CUDA device is visible on this machine");
    int index = local_rank % n;
    if (text.size() > 5) {
      try {
        std::size_t used = 0;
        index = std::stoi(text.substr(5), &used);
        if (used != text.size() - 5) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        throw UsageError("--device " + text + ": expected cuda:N with N a device index");
      }
      if (index < 0 || index >= n)
        throw UsageError("--device " + text + ": only " + std::to_string(n) + " CUDA device(s) visible");
    }
    return Device::cuda(index);
  }
  throw UsageError("--device must be auto, cpu, cuda, cuda:N or cpu:1 (the emulated device), got '" + text + "'");
}

void synchronize(Device device) {
  if (device.is_cuda()) cuda::synchronize();
}

void synchronize_compute(Device device) {
  if (device.is_cuda()) cuda::synchronize_compute();
}

}  // namespace usp
