// Tensor: a contiguous n-d array of one dtype on one device, viewing a tracked Storage.
// Views share storage: a gradient bucket or a ZeRO shard is a view of a flat buffer, so
// writing through the view writes the buffer, and the bytes are counted once.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "common/device.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/memory_tracker.hpp"

namespace usp {

using Shape = std::vector<std::int64_t>;
std::int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3]"

// Owned bytes, allocated through the MemoryTracker under one category.
class Storage {
 public:
  Storage(std::size_t bytes, MemCategory category, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  MemCategory category() const { return category_; }
  Device device() const { return device_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  MemCategory category_;
  Device device_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // New storage. empty() leaves the contents undefined; zeros() clears them.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32,
                      MemCategory category = MemCategory::Temporary, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32,
                      MemCategory category = MemCategory::Temporary, Device device = Device::cpu());
  // A CPU f32 tensor holding values (converted to dtype when it is not f32).
  static Tensor from_floats(const std::vector<float>& values, const Shape& shape,
                            DType dtype = DType::f32, MemCategory category = MemCategory::Temporary);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const;  // negative i counts from the end
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  MemCategory category() const;
  std::int64_t offset() const { return offset_; }  // in elements, into the storage
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool shares_storage_with(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  void* raw() const;  // the first element's address (device memory for CUDA tensors)
  // Typed access; T must match the dtype (float for f32, int32_t for i32, uint16_t for
  // bf16/f16, uint8_t for fp8). Throws otherwise.
  template <class T> T* data() const {
    if (!dtype_matches<T>(dtype_))
      throw Error(std::string("Tensor::data<T>: T does not match dtype ") + dtype_name(dtype_));
    return static_cast<T*>(raw());
  }

  // Views (no copy): numel elements starting offset elements into this tensor, shaped shape.
  Tensor view(std::int64_t offset, const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;  // same numel; one dim may be -1
  Tensor flatten() const;                    // 1-d view
  Tensor slice(std::int64_t begin, std::int64_t end) const;  // rows [begin, end) of dim 0

  // Copies.
  Tensor clone(MemCategory category) const;
  Tensor to(Device device, MemCategory category) const;
  Tensor to(Device device) const { return to(device, category()); }
  void copy_from(const Tensor& src);  // same numel and dtype; any devices
  void zero();
  void fill(float value);  // any float dtype or i32

  // Host-side f32 copy of the values (converting low-precision storage), for tests and printing.
  std::vector<float> to_floats() const;
  std::string str(int max_elems = 16) const;  // "[1, 2, 3] f32 cpu"

 private:
  std::shared_ptr<Storage> storage_;
  std::int64_t offset_ = 0;
  Shape shape_;
  std::int64_t numel_ = 0;
  DType dtype_ = DType::f32;
};

// Copies nbytes between host and/or device memory (cudaMemcpy when either side is CUDA).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t nbytes);

// t itself when it already lives on `device` (or is undefined), else a copy there tagged
// `category`: how host code reads a GPU tensor's values, and how data made on the host reaches a
// GPU, without copying anything on the CPU.
Tensor on_device(const Tensor& t, Device device, MemCategory category = MemCategory::Temporary);

}  // namespace usp
