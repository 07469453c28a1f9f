// How far one computation's numbers are from another's, as the chapters that compare kernels,
// recipes or layouts report it (12: flash attention against the naive one, and the CUDA ladder
// against the CPU; 13: each fused chain against the unfused one; 14: the FP8 GEMM against bf16
// and fp32; 05-07: each variant's final parameters against the first variant's):
//
//   max_abs_diff(a, b)          max_i |a[i] - b[i]|                      0 for empty sequences
//   relative_error(got, want)   max_abs_diff(got, want) / max_i |want[i]|
//                               (the plain max_abs_diff when want is all zeros)
//
// The differences are taken in double, where the difference of two floats is exact: the result
// is the true gap, not one rounded to float. A NaN in either sequence makes the result NaN (a
// comparison never reports a broken output as close). The two sequences must be as long as each
// other (checked: comparing a prefix would pass silently).
#pragma once
#include <span>

namespace usp {

double max_abs_diff(std::span<const float> a, std::span<const float> b);
double relative_error(std::span<const float> got, std::span<const float> want);

}  // namespace usp
