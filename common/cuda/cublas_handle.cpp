// The process's cuBLAS handle (see cublas_handle.hpp).
#include "common/cuda/cublas_handle.hpp"

#include <string>

#include "common/cuda/streams.hpp"
#include "common/error.hpp"

namespace usp::cuda {

void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusString(status));
}

cublasHandle_t cublas_handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    cublas_check(cublasCreate(&created), "cublasCreate");
    cublas_check(cublasSetStream(created, compute_stream()), "cublasSetStream");
    cublas_check(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return created;
  }();
  return h;
}

}  // namespace usp::cuda
