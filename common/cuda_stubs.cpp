// usp::cuda for builds without CUDA: no device is ever visible, and anything that would need
// one fails with a message that names the cause (the build), not a symptom.
#include <string>

#include "common/cuda_support.hpp"
#include "common/error.hpp"

namespace usp::cuda {
namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw Error(std::string("usp::cuda::") + what + ": this build has no CUDA (configure with nvcc "
              "available and -DUSP_CUDA=ON or AUTO)");
}

}  // namespace

int device_count() { return 0; }
void set_device(int) { no_cuda("set_device"); }
int current_device() { no_cuda("current_device"); }
void* malloc(std::size_t) { no_cuda("malloc"); }
void free(void* ptr) {
  // Nothing CUDA was ever allocated here; freeing nothing is not an error.
  if (ptr != nullptr) no_cuda("free");
}
void copy(void*, const void*, std::size_t) { no_cuda("copy"); }
void zero(void*, std::size_t) { no_cuda("zero"); }
void synchronize() { no_cuda("synchronize"); }
void synchronize_compute() { no_cuda("synchronize_compute"); }
std::int64_t bytes_in_use() { return -1; }
std::int64_t pool_bytes_held() { return -1; }
const char* device_name() { return "none"; }
std::array<unsigned char, 16> device_uuid(int) { no_cuda("device_uuid"); }

}  // namespace usp::cuda
