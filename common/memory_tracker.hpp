// The memory tracker: every byte a tensor owns is allocated here, tagged with what it is for.
// One tracker per process (= per rank). It knows the current and peak bytes per category and
// in total, and can record a timeline of (time, category, bytes) for the memory-profile plots.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/device.hpp"

namespace usp {

enum class MemCategory : unsigned char {
  Parameter, Gradient, OptimizerState, Activation, CommBuffer, Temporary
};
inline constexpr int kNumMemCategories = 6;
const char* mem_category_name(MemCategory c);  // "parameter", "gradient", "optimizer_state", ...

// Bytes per category at one moment.
struct MemCounts {
  std::array<std::int64_t, kNumMemCategories> bytes{};
  std::int64_t operator[](MemCategory c) const { return bytes[static_cast<int>(c)]; }
  std::int64_t total() const;
};

// One timeline point: after an allocation or release (or a phase mark), the bytes in use.
struct MemEvent {
  double time_s = 0;         // seconds since the tracker's epoch
  MemCategory category{};    // the category that changed
  std::int64_t delta = 0;    // + allocated, - released, 0 for a mark
  MemCounts current;         // bytes per category right after the event
  std::string mark;          // non-empty for a phase mark ("forward", "backward", "optimizer")
};

class MemoryTracker {
 public:
  static MemoryTracker& instance();  // the process's tracker

  // Allocates bytes on the device (64-byte aligned on the CPU, cudaMalloc on CUDA) and counts
  // them under category. Zero bytes gives a non-null unique pointer that counts zero.
  void* allocate(std::size_t bytes, MemCategory category, Device device);
  void release(void* ptr, std::size_t bytes, MemCategory category, Device device);

  // Counts on one device kind (default: summed over CPU and CUDA).
  MemCounts current() const;
  MemCounts current(DeviceKind kind) const;
  // Peak of each category on its own, and peak of the total (not the sum of the peaks).
  MemCounts peak() const;
  std::int64_t peak_total() const;
  void reset_peak();  // peaks restart from the current counts

  // Work a measurement leaves out (a held-out evaluation between training steps,
  // common/train/validation_loss.hpp). While one lives, allocations count in current() as ever
  // and a recording timeline is paused; at its end the peaks are those from before it, continued
  // from the counts after it (each category and the total): the peaks of a run without the work,
  // exactly, when the work releases what it allocates.
  //   { MemoryTracker::Unmeasured off_the_books; val = validation_loss(...); }
  class Unmeasured {
   public:
    Unmeasured();
    ~Unmeasured();
    Unmeasured(const Unmeasured&) = delete;
    Unmeasured& operator=(const Unmeasured&) = delete;

   private:
    MemCounts peak_;
    std::int64_t peak_total_;
    bool recording_;
  };

  // Timeline recording (off by default; each event costs a little).
  void record_timeline(bool on);
  void mark(const std::string& label);  // a phase boundary on the timeline
  std::vector<MemEvent> timeline() const;
  void clear_timeline();
  // CSV: time_s,event,category,delta,parameter,gradient,optimizer_state,activation,comm_buffer,temporary,total
  void write_timeline_csv(const std::string& path) const;

 private:
  MemoryTracker();
  void note(MemCategory c, std::int64_t delta, DeviceKind kind, const std::string& mark);

  mutable std::mutex mu_;
  std::array<MemCounts, 2> current_{};  // per DeviceKind
  MemCounts peak_{};
  std::int64_t peak_total_ = 0;
  bool recording_ = false;
  std::vector<MemEvent> timeline_;
  double epoch_s_ = 0;
};

// Bytes in use on the current CUDA device as the driver sees it (cudaMemGetInfo), for
// cross-checking the tracker; -1 without CUDA.
std::int64_t cuda_bytes_in_use();

}  // namespace usp
