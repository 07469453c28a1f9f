// USP_HD marks small functions usable both on the host and inside CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define USP_HD __host__ __device__ __forceinline__
#else
#define USP_HD inline
#endif

// USP_UNROLL before a loop with a compile-time trip count asks nvcc to unroll it (so arrays indexed
// by its counter stay in registers); nothing on the host compiler.
#if defined(__CUDACC__)
#define USP_UNROLL _Pragma("unroll")
#else
#define USP_UNROLL
#endif
