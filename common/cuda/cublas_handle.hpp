// The process's cuBLAS handle and status check (internal to the CUDA files of the core and of
// kernels/, like cuda_check.hpp). One handle per process — a rank drives one GPU — created on
// the device current at first use, bound to the compute stream (streams.hpp), in plain fp32
// math (CUBLAS_DEFAULT_MATH: no TF32 behind sgemm's back). Never destroyed: a static destructor
// could run after the CUDA runtime has shut down, and the process's end releases it anyway.
#pragma once
#include <cublas_v2.h>

namespace usp::cuda {

cublasHandle_t cublas_handle();
// Throws usp::Error("cuBLAS: <what> failed: <status>") unless status is CUBLAS_STATUS_SUCCESS.
void cublas_check(cublasStatus_t status, const char* what);

}  // namespace usp::cuda
