// The CPU ops' argument checks and the f32/bf16 adaptor (see float_args.hpp).
#include "common/ops/float_args.hpp"

#include <string>

namespace usp::ops::detail {

namespace {
std::string describe(const Tensor& t) {
  return shape_str(t.shape()) + " " + dtype_name(t.dtype());
}
}  // namespace

void require_cpu(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->defined() && t->device().is_cuda())
      throw NotImplemented(std::string("ops::") + op + ": the CUDA model path is not implemented yet");
}

void check_float(const char* op, const char* name, const Tensor& t) {
  USP_CHECK(t.defined(), std::string("ops::") + op + ": " + name + " is undefined");
  USP_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::bf16 || t.dtype() == DType::f16,
            std::string("ops::") + op + ": " + name + " is " + describe(t) + ", expected f32, bf16 or f16");
}

void check_i32(const char* op, const char* name, const Tensor& t) {
  USP_CHECK(t.defined(), std::string("ops::") + op + ": " + name + " is undefined");
  USP_CHECK(t.dtype() == DType::i32,
            std::string("ops::") + op + ": " + name + " is " + describe(t) + ", expected i32");
}

void check_shape(const char* op, const char* name, const Tensor& t, const Shape& expected) {
  USP_CHECK(t.shape() == expected, std::string("ops::") + op + ": " + name + " is " + describe(t) +
                                       ", expected shape " + shape_str(expected));
}

void check_rows(const char* op, const char* name, const Tensor& t, std::int64_t rows, std::int64_t cols) {
  USP_CHECK(t.ndim() >= 1 && t.dim(-1) == cols && t.numel() == rows * cols,
            std::string("ops::") + op + ": " + name + " is " + describe(t) + ", expected [" +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

void check_numel(const char* op, const char* name, const Tensor& t, std::int64_t n) {
  USP_CHECK(t.numel() == n, std::string("ops::") + op + ": " + name + " is " + describe(t) +
                                ", expected " + std::to_string(n) + " elements");
}

FloatIn::FloatIn(const Tensor& t) {
  if (t.dtype() == DType::f32) {
    data_ = t.data<float>();
    return;
  }
  widened_ = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary);
  convert_to_float(t.dtype(), t.raw(), widened_.data<float>(), static_cast<std::size_t>(t.numel()));
  data_ = widened_.data<float>();
}

FloatOut::FloatOut(Tensor& t, bool load) : target_(t) {
  if (t.dtype() == DType::f32) {
    data_ = t.data<float>();
    return;
  }
  widened_ = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary);
  data_ = widened_.data<float>();
  if (load) convert_to_float(t.dtype(), t.raw(), data_, static_cast<std::size_t>(t.numel()));
}

void FloatOut::store() {
  if (!widened_.defined()) return;
  convert_from_float(data_, target_.dtype(), target_.raw(), static_cast<std::size_t>(target_.numel()));
}

}  // namespace usp::ops::detail
