#include "common/memory_tracker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common/cuda_support.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"

namespace usp {

namespace {
double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}
constexpr std::size_t kCpuAlignment = 64;  // a cache line; also what AVX-512 loads like
}  // namespace

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Parameter: return "parameter";
    case MemCategory::Gradient: return "gradient";
    case MemCategory::OptimizerState: return "optimizer_state";
    case MemCategory::Activation: return "activation";
    case MemCategory::CommBuffer: return "comm_buffer";
    case MemCategory::Temporary: return "temporary";
  }
  return "?";
}

std::int64_t MemCounts::total() const {
  std::int64_t t = 0;
  for (auto b : bytes) t += b;
  return t;
}

MemoryTracker& MemoryTracker::instance() {
  static MemoryTracker tracker;
  return tracker;
}

MemoryTracker::MemoryTracker() : epoch_s_(now_s()) {
#if defined(__GLIBC__)
  // A training step frees and re-allocates the same activation-sized blocks every step. glibc
  // serves blocks above its mmap threshold with fresh mmap/munmap pairs, so every step would pay
  // page faults to zero-fill them again (measured: a third of a small model's step time in the
  // kernel). Keeping such blocks in the heap makes the allocator a cache, as PyTorch's is. The
  // tracker's counts are unaffected: they count what tensors hold, not what the heap keeps.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void* MemoryTracker::allocate(std::size_t bytes, MemCategory category, Device device) {
  void* p = nullptr;
  if (device.is_cpu()) {
    // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
    const std::size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    p = std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
    if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes of " +
                        mem_category_name(category));
  } else {
    cuda::set_device(device.index);
    p = cuda::malloc(bytes == 0 ? 1 : bytes);
  }
  note(category, static_cast<std::int64_t>(bytes), device.kind, {});
  return p;
}

void MemoryTracker::release(void* ptr, std::size_t bytes, MemCategory category, Device device) {
  if (!ptr) return;
  if (device.is_cpu()) {
    std::free(ptr);
  } else {
    cuda::free(ptr);
  }
  note(category, -static_cast<std::int64_t>(bytes), device.kind, {});
}

void MemoryTracker::note(MemCategory c, std::int64_t delta, DeviceKind kind, const std::string& mark) {
  std::lock_guard<std::mutex> lock(mu_);
  const int ci = static_cast<int>(c);
  current_[static_cast<int>(kind)].bytes[ci] += delta;
  MemCounts sum;
  for (int i = 0; i < kNumMemCategories; ++i)
    sum.bytes[i] = current_[0].bytes[i] + current_[1].bytes[i];
  if (sum.bytes[ci] > peak_.bytes[ci]) peak_.bytes[ci] = sum.bytes[ci];
  const std::int64_t total = sum.total();
  if (total > peak_total_) peak_total_ = total;
  if (recording_) timeline_.push_back({now_s() - epoch_s_, c, delta, sum, mark});
}

MemCounts MemoryTracker::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemCounts sum;
  for (int i = 0; i < kNumMemCategories; ++i) sum.bytes[i] = current_[0].bytes[i] + current_[1].bytes[i];
  return sum;
}

MemCounts MemoryTracker::current(DeviceKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_[static_cast<int>(kind)];
}

MemCounts MemoryTracker::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

std::int64_t MemoryTracker::peak_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_total_;
}

void MemoryTracker::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < kNumMemCategories; ++i) peak_.bytes[i] = current_[0].bytes[i] + current_[1].bytes[i];
  peak_total_ = peak_.total();
}

MemoryTracker::Unmeasured::Unmeasured() {
  MemoryTracker& t = MemoryTracker::instance();
  std::lock_guard<std::mutex> lock(t.mu_);
  peak_ = t.peak_;
  peak_total_ = t.peak_total_;
  recording_ = t.recording_;
  t.recording_ = false;
}

MemoryTracker::Unmeasured::~Unmeasured() {
  MemoryTracker& t = MemoryTracker::instance();
  std::lock_guard<std::mutex> lock(t.mu_);
  std::int64_t total = 0;
  for (int i = 0; i < kNumMemCategories; ++i) {
    const std::int64_t now = t.current_[0].bytes[i] + t.current_[1].bytes[i];
    t.peak_.bytes[i] = std::max(peak_.bytes[i], now);
    total += now;
  }
  t.peak_total_ = std::max(peak_total_, total);
  t.recording_ = recording_;
}

void MemoryTracker::record_timeline(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  recording_ = on;
}

void MemoryTracker::mark(const std::string& label) { note(MemCategory::Temporary, 0, DeviceKind::cpu, label); }

std::vector<MemEvent> MemoryTracker::timeline() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timeline_;
}

void MemoryTracker::clear_timeline() {
  std::lock_guard<std::mutex> lock(mu_);
  timeline_.clear();
  epoch_s_ = now_s();
}

void MemoryTracker::write_timeline_csv(const std::string& path) const {
  std::ostringstream out;
  out << "time_s,event,category,delta";
  for (int i = 0; i < kNumMemCategories; ++i) out << ',' << mem_category_name(static_cast<MemCategory>(i));
  out << ",total\n";
  for (const MemEvent& e : timeline()) {
    out << e.time_s << ',' << (e.mark.empty() ? (e.delta >= 0 ? "alloc" : "free") : e.mark) << ','
        << mem_category_name(e.category) << ',' << e.delta;
    for (auto b : e.current.bytes) out << ',' << b;
    out << ',' << e.current.total() << '\n';
  }
  write_file_atomic(path, out.str());
}

std::int64_t cuda_bytes_in_use() { return cuda::device_count() > 0 ? cuda::bytes_in_use() : -1; }

}  // namespace usp
