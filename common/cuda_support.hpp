// The few CUDA runtime calls the core needs, behind a plain C++ interface so that files which
// do not use CUDA never include its headers. Without CUDA compiled in, device_count() is 0 and
// everything else throws usp::Error("... built without CUDA").
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace usp::cuda {

int device_count();
void set_device(int index);
int current_device();
void* malloc(std::size_t bytes);
void free(void* ptr);
void copy(void* dst, const void* src, std::size_t bytes);  // any direction (unified addressing)
void zero(void* ptr, std::size_t bytes);
void synchronize();
void synchronize_compute();  // the compute stream (common/cuda/streams.hpp) only
std::int64_t bytes_in_use();  // total - free from cudaMemGetInfo on the current device
// The device memory this process's allocator holds from the driver on the current device (its
// memory pool's reserved bytes, after trimming what it keeps for reuse): unlike bytes_in_use(),
// other processes on the same GPU do not move it. -1 without a GPU or a memory pool.
std::int64_t pool_bytes_held();
const char* device_name();    // e.g. "NVIDIA H100 80GB HBM3"
// The device's 16-byte UUID: the same physical GPU has the same UUID in every process, whatever
// CUDA_VISIBLE_DEVICES numbers it, so ranks can tell whether they share a GPU.
std::array<unsigned char, 16> device_uuid(int index);

}  // namespace usp::cuda
