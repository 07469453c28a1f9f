// usp::cuda with the CUDA runtime: the few calls the core makes, each failure turned into a
// usp::Error with CUDA's own message. A CUDA build must still run on a machine with no GPU or no
// driver, so device_count() reports 0 there instead of failing.
//
// Memory comes from CUDA's stream-ordered allocator (cudaMallocAsync / cudaFreeAsync on the
// compute stream) rather than cudaMalloc / cudaFree, because cudaFree synchronises the whole
// device: releasing any tensor during backward would wait for the gradient all-reduce in flight
// on the communication stream (no overlap left to measure), and could deadlock a rank whose
// NCCL receive waits for a peer that waits for it. Stream order makes reuse safe: a block freed
// on the compute stream is handed out again only to work ordered after the free, and the NCCL
// backend orders the compute stream after every op before its buffers can be released.
// The pool keeps freed blocks for reuse (like a caching allocator); bytes_in_use() trims it
// first, so it reports what is really allocated. Devices without memory pools fall back to
// cudaMalloc / cudaFree.
#include "common/cuda_support.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"

namespace usp::cuda {
namespace {

// Whether the current device allocates through its default memory pool; the first use of a
// device also lets its pool keep freed memory (release threshold: unlimited), since returning it
// to the driver at every synchronisation and mapping it again makes each allocation slow.
bool uses_memory_pool(int device) {
  static std::mutex mu;
  static std::vector<signed char> known;  // per device: -1 unknown, 0 no, 1 yes
  std::lock_guard<std::mutex> lock(mu);
  if (device >= static_cast<int>(known.size())) known.resize(static_cast<std::size_t>(device) + 1, -1);
  signed char& answer = known[static_cast<std::size_t>(device)];
  if (answer < 0) {
    int supported = 0;
    USP_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
    if (supported != 0) {
      cudaMemPool_t pool = nullptr;
      USP_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
      std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max();
      USP_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    }
    answer = supported != 0 ? 1 : 0;
  }
  return answer == 1;
}

}  // namespace

int device_count() {
  // Asked once: the visible devices cannot change during the process (CUDA_VISIBLE_DEVICES is
  // read when the runtime starts), and without a driver every query would fail the same way.
  static const int count = [] {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // no driver / no device: not an error for us, just zero GPUs
      return 0;
    }
    return n;
  }();
  return count;
}

void set_device(int index) { USP_CUDA_CHECK(cudaSetDevice(index)); }

int current_device() {
  int index = 0;
  USP_CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

void* malloc(std::size_t bytes) {
  // cudaMalloc(0) may hand back nullptr; the tracker promises a unique non-null pointer for a
  // zero-byte tensor, so ask for one byte (the driver rounds it up to its granularity anyway).
  void* ptr = nullptr;
  const std::size_t n = bytes == 0 ? 1 : bytes;
  const cudaError_t err = uses_memory_pool(current_device()) ? cudaMallocAsync(&ptr, n, compute_stream())
                                                              : cudaMalloc(&ptr, n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("CUDA error: cannot allocate " + std::to_string(bytes) + " bytes on cuda:" +
                std::to_string(current_device()) + ": " + cudaGetErrorString(err));
  }
  return ptr;
}

void free(void* ptr) {
  if (ptr == nullptr) return;
  // The tracker frees on the device it allocated on, which is current (one device per rank).
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = uses_memory_pool(device) ? cudaFreeAsync(ptr, compute_stream()) : cudaFree(ptr);
  // Tensors owned by static objects are released after the runtime has shut down at exit; the
  // driver reclaims the memory with the context then, so there is nothing to report.
  if (err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed) {
    (void)cudaGetLastError();
    return;
  }
  USP_CUDA_CHECK(err);
}

void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  // cudaMemcpyDefault lets unified addressing tell host from device pointers. The copy runs on
  // the legacy default stream (the compute stream), after any kernel issued before it.
  USP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void zero(void* ptr, std::size_t bytes) {
  if (bytes == 0) return;
  USP_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
}

void synchronize() { USP_CUDA_CHECK(cudaDeviceSynchronize()); }
void synchronize_compute() { USP_CUDA_CHECK(cudaStreamSynchronize(compute_stream())); }

namespace {

// The current device's pool with the blocks it keeps for reuse handed back (null without one).
// Frees are stream-ordered and the pool keeps what it frees: let the compute stream reach the
// frees issued so far, then trim, so what is left counts live allocations only. (The legacy
// stream does not wait for the non-blocking NCCL streams.)
cudaMemPool_t trimmed_pool(int device) {
  if (!uses_memory_pool(device)) return nullptr;
  USP_CUDA_CHECK(cudaStreamSynchronize(compute_stream()));
  cudaMemPool_t pool = nullptr;
  USP_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  USP_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
  return pool;
}

}  // namespace

std::int64_t pool_bytes_held() {
  if (device_count() == 0) return -1;
  cudaMemPool_t pool = trimmed_pool(current_device());
  if (pool == nullptr) return -1;
  std::uint64_t reserved = 0;
  USP_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  return static_cast<std::int64_t>(reserved);
}

std::int64_t bytes_in_use() {
  if (device_count() == 0) return -1;  // nothing to measure: same answer as a CPU-only build
  trimmed_pool(current_device());
  std::size_t free_bytes = 0, total_bytes = 0;
  USP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<std::int64_t>(total_bytes - free_bytes);
}

const char* device_name() {
  if (device_count() == 0) return "none";
  // The name must outlive the call; one buffer per thread keeps concurrent callers apart.
  thread_local std::string name;
  cudaDeviceProp prop{};
  USP_CUDA_CHECK(cudaGetDeviceProperties(&prop, current_device()));
  name = prop.name;
  return name.c_str();
}

std::array<unsigned char, 16> device_uuid(int index) {
  cudaDeviceProp prop{};
  USP_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  std::array<unsigned char, 16> uuid{};
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(prop.uuid.bytes[i]);
  return uuid;
}

}  // namespace usp::cuda
