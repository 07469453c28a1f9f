// USP_HD marks small functions usable both on the host and inside CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define USP_HD __host__ __device__ __forceinline__
#else
#define USP_HD inline
#endif
