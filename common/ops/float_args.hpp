// How the CPU ops see their tensor arguments (internal to common/ops/).
//
//   require_cpu    the device dispatch: CUDA tensors throw NotImplemented until the CUDA model
//                  path lands.
//   check_*        dtype and shape checks; a mismatch throws usp::Error naming the op, the
//                  argument and the shapes.
//   FloatIn        a float argument read as f32: an f32 tensor's own memory (no copy), or a
//                  bf16 tensor widened into a Temporary.
//   FloatOut       a float argument written as f32: an f32 tensor's own memory, or a Temporary
//                  that store() rounds back into the bf16 tensor (to nearest even). With
//                  load = true the Temporary starts from the tensor's values (accumulating or
//                  in-place outputs).
#pragma once
#include <cstdint>
#include <initializer_list>

#include "common/tensor.hpp"

namespace usp::ops::detail {

// Throws NotImplemented("ops::<op>: the CUDA model path is not implemented yet") when any
// defined tensor lives on a CUDA device.
void require_cpu(const char* op, std::initializer_list<const Tensor*> tensors);

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
