// The matmul ladder as a table: every rung and baseline the runner times and the [gpu] tests
// check, in order, with where it lives and the one idea it adds.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kernels/matmul/gemm.hpp"

namespace usp::ch11 {

enum class Precision { f32, bf16 };  // f32: fp32 in and out; bf16: bf16 in, fp32 accumulate and out

struct Rung {
  std::string name;  // as in kernels.csv and --kernels: "01_naive", ..., "cublas_sgemm"
  std::string file;  // where its kernel lives
  std::string idea;  // what it adds to the rung before
  Precision precision = Precision::f32;
  bool baseline = false;  // cuBLAS: what the rungs of the same precision are compared with
  // The launcher (device pointers), matching the precision; empty when the build has no CUDA.
  std::function<void(const matmul::GemmF32&)> run_f32;
  std::function<void(const matmul::GemmBf16&)> run_bf16;
};

// Rungs 01..08, then cublas_sgemm and cublas_bf16.
const std::vector<Rung>& ladder();
const Rung& find_rung(const std::string& name);  // throws usp::UsageError naming the choices
const Rung& baseline_for(Precision p);
const char* precision_name(Precision p);  // "f32" or "bf16"

}  // namespace usp::ch11
