#include "common/tensor.hpp"

#include <cstring>
#include <sstream>

#include "common/cuda_support.hpp"

namespace usp {

std::int64_t shape_numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw Error("negative dimension in shape " + shape_str(s));
    if (__builtin_mul_overflow(n, d, &n)) throw Error("shape " + shape_str(s) + " has more elements than fit in 64 bits");
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t nbytes) {
  if (nbytes == 0 || dst == src) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
  } else {
    cuda::copy(dst, src, nbytes);
  }
}

// ---- Storage -------------------------------------------------------------------------------

Storage::Storage(std::size_t bytes, MemCategory category, Device device)
    : bytes_(bytes), category_(category), device_(device) {
  ptr_ = MemoryTracker::instance().allocate(bytes, category, device);
}

Storage::~Storage() { MemoryTracker::instance().release(ptr_, bytes_, category_, device_); }

// ---- Tensor --------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, MemCategory category, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  t.dtype_ = dtype;
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(t.numel_, static_cast<std::int64_t>(dtype_size(dtype)), &bytes))
    throw Error("a " + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape) + " has more bytes than fit in 64 bits");
  t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(bytes), category, device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, MemCategory category, Device device) {
  Tensor t = empty(shape, dtype, category, device);
  t.zero();
  return t;
}

Tensor Tensor::from_floats(const std::vector<float>& values, const Shape& shape, DType dtype,
                           MemCategory category) {
  if (shape_numel(shape) != static_cast<std::int64_t>(values.size()))
    throw Error("Tensor::from_floats: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, dtype, category, Device::cpu());
  convert_from_float(values.data(), dtype, t.raw(), values.size());
  return t;
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw Error("Tensor::dim(" + std::to_string(i) + ") of a " + std::to_string(n) + "-d tensor");
  return shape_[i];
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

MemCategory Tensor::category() const { return storage_ ? storage_->category() : MemCategory::Temporary; }

void* Tensor::raw() const {
  if (!storage_) throw Error("use of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

Tensor Tensor::view(std::int64_t offset, const Shape& shape) const {
  if (!storage_) throw Error("view of an undefined tensor");
  const std::int64_t n = shape_numel(shape);
  if (offset < 0 || offset + n > numel_)
    throw Error("Tensor::view: elements [" + std::to_string(offset) + ", " + std::to_string(offset + n) +
                ") outside a tensor of " + std::to_string(numel_));
  Tensor t = *this;
  t.offset_ = offset_ + offset;
  t.shape_ = shape;
  t.numel_ = n;
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw Error("Tensor::reshape: more than one -1 in " + shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel_ % known != 0)
      throw Error("Tensor::reshape: cannot infer " + shape_str(shape) + " from " + shape_str(shape_));
    s[infer] = numel_ / known;
  }
  if (shape_numel(s) != numel_)
    throw Error("Tensor::reshape: " + shape_str(shape_) + " has " + std::to_string(numel_) +
                " elements, " + shape_str(s) + " has " + std::to_string(shape_numel(s)));
  return view(0, s);
}

Tensor Tensor::flatten() const { return view(0, {numel_}); }

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  if (ndim() == 0) throw Error("Tensor::slice of a 0-d tensor");
  if (begin < 0 || end < begin || end > shape_[0])
    throw Error("Tensor::slice: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") of " + std::to_string(shape_[0]));
  const std::int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  Shape s = shape_;
  s[0] = end - begin;
  return view(begin * row, s);
}

Tensor Tensor::clone(MemCategory category) const { return to(device(), category); }

Tensor Tensor::to(Device device, MemCategory category) const {
  Tensor t = empty(shape_, dtype_, category, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.numel_ != numel_ || src.dtype_ != dtype_)
    throw Error("Tensor::copy_from: " + src.str(0) + " into " + str(0) + " (numel and dtype must match)");
  copy_bytes(raw(), device(), src.raw(), src.device(), nbytes());
}

void Tensor::zero() {
  if (device().is_cpu()) {
    std::memset(raw(), 0, nbytes());
  } else {
    cuda::zero(raw(), nbytes());
  }
}

void Tensor::fill(float value) {
  Tensor host = device().is_cpu() ? *this : empty(shape_, dtype_, MemCategory::Temporary);
  std::vector<float> values(static_cast<std::size_t>(numel_), value);
  convert_from_float(values.data(), dtype_, host.raw(), values.size());
  if (!device().is_cpu()) copy_from(host);
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> out(static_cast<std::size_t>(numel_));
  if (device().is_cpu()) {
    convert_to_float(dtype_, raw(), out.data(), out.size());
  } else {
    Tensor host = to(Device::cpu(), MemCategory::Temporary);
    convert_to_float(dtype_, host.raw(), out.data(), out.size());
  }
  return out;
}

std::string Tensor::str(int max_elems) const {
  if (!defined()) return "<undefined tensor>";
  std::ostringstream os;
  if (max_elems > 0) {
    const auto v = to_floats();
    os << '[';
    const std::size_t shown = std::min<std::size_t>(v.size(), static_cast<std::size_t>(max_elems));
    for (std::size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << v[i];
    if (shown < v.size()) os << ", ... (" << v.size() << " elements)";
    os << "] ";
  }
  os << shape_str(shape_) << ' ' << dtype_name(dtype_) << ' ' << device().str();
  return os.str();
}

Tensor on_device(const Tensor& t, Device device, MemCategory category) {
  return !t.defined() || t.device() == device ? t : t.to(device, category);
}

}  // namespace usp
