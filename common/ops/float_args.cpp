// The ops' argument checks and the f32/bf16/f16 adaptor (see float_args.hpp).
#include "common/ops/float_args.hpp"

#include <string>

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/op_kernels.hpp"
#endif

namespace usp::ops::detail {

namespace {
std::string describe(const Tensor& t) {
  return shape_str(t.shape()) + " " + dtype_name(t.dtype());
}

}  // namespace

void widen_to_f32(const Tensor& t, float* dst) {
#if defined(USP_HAVE_CUDA)
  if (t.device().is_cuda()) return cuda_kernels::widen(t.dtype(), t.raw(), dst, t.numel());
#endif
  convert_to_float(t.dtype(), t.raw(), dst, static_cast<std::size_t>(t.numel()));
}

void round_from_f32(const float* src, const Tensor& t) {
#if defined(USP_HAVE_CUDA)
  if (t.device().is_cuda()) return cuda_kernels::narrow(src, t.dtype(), t.raw(), t.numel());
#endif
  convert_from_float(src, t.dtype(), t.raw(), static_cast<std::size_t>(t.numel()));
}

bool on_cuda(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (!first) {
      first = t;
    } else if (!(t->device() == first->device())) {
      throw Error(std::string("ops::") + op + ": arguments on different devices (" + first->device().str() +
                  " and " + t->device().str() + ")");
    }
  }
  return first && first->device().is_cuda();
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
  widened_ = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary, t.device());
  widen_to_f32(t, widened_.data<float>());
  data_ = widened_.data<float>();
}

FloatOut::FloatOut(Tensor& t, bool load) : target_(t) {
  if (t.dtype() == DType::f32) {
    data_ = t.data<float>();
    return;
  }
  widened_ = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary, t.device());
  data_ = widened_.data<float>();
  if (load) widen_to_f32(t, data_);
}

void FloatOut::store() {
  if (!widened_.defined()) return;
  round_from_f32(data_, target_);
}

}  // namespace usp::ops::detail
