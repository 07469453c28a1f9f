// How the ops see their tensor arguments (internal to common/ops/).
//
//   on_cuda        the device dispatch: true when the op's tensors live on a CUDA device (then
//                  the op calls its CUDA twin in common/ops/cuda/), false on the CPU; arguments
//                  on different devices throw usp::Error
//   check_*        dtype and shape checks; a mismatch throws usp::Error naming the op, the
//                  argument and the shapes.
//   FloatIn        a float argument read as f32: an f32 tensor's own memory (no copy), or a
//                  bf16 / f16 tensor widened into a Temporary on the tensor's device.
//   FloatOut       a float argument written as f32: an f32 tensor's own memory, or a Temporary
//                  that store() rounds back into the bf16 tensor (to nearest even). With
//                  load = true the Temporary starts from the tensor's values (accumulating or
//                  in-place outputs).
#pragma once
#include <cstdint>
#include <initializer_list>

#include "common/tensor.hpp"

namespace usp::ops::detail {

// True when the defined tensors live on a CUDA device, false when on the CPU (or none is
// defined); Error naming the op and both devices when they are not all on the same one.
bool on_cuda(const char* op, std::initializer_list<const Tensor*> tensors);

// t is f32, bf16 or f16 (the float dtypes the ops compute with, in fp32).
void check_float(const char* op, const char* name, const Tensor& t);
// t is i32.
void check_i32(const char* op, const char* name, const Tensor& t);
// t has exactly this shape.
void check_shape(const char* op, const char* name, const Tensor& t, const Shape& expected);
// t is [rows, cols] with its leading dimensions flattened: last dim = cols, numel = rows · cols.
void check_rows(const char* op, const char* name, const Tensor& t, std::int64_t rows, std::int64_t cols);
// t has exactly n elements (any shape).
void check_numel(const char* op, const char* name, const Tensor& t, std::int64_t n);

// All of t's narrow (bf16 / f16) values widened to f32 at dst, on t's device; and n = t.numel()
// f32 values at src rounded to nearest even into t (the two halves of FloatIn / FloatOut).
void widen_to_f32(const Tensor& t, float* dst);
void round_from_f32(const float* src, const Tensor& t);

class FloatIn {
 public:
  explicit FloatIn(const Tensor& t);
  const float* data() const { return data_; }

 private:
  Tensor widened_;  // undefined for f32
  const float* data_ = nullptr;
};

class FloatOut {
 public:
  FloatOut(Tensor& t, bool load);
  float* data() const { return data_; }
  // Rounds the f32 values back into a bf16 tensor; nothing to do for f32. Call once, at the end.
  void store();

 private:
  Tensor& target_;
  Tensor widened_;  // undefined for f32
  float* data_ = nullptr;
};

}  // namespace usp::ops::detail
