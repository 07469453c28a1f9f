// Trace: timed spans per rank and per stream ("compute", "comm"), written as a Chrome trace
// (open in Perfetto or chrome://tracing: one process per rank, one thread per stream) and as a
// CSV for the plot scripts. Times are microseconds since the tracer's epoch, which
// Tracer::align() sets at a barrier so that ranks on one clock line up.
// While the tracer is enabled, the MPI communicator records each op it runs (except barriers)
// as a "comm" span named after the op ("all_reduce", ...), from when its progress thread starts
// the op to when it completes.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace usp {

class Communicator;

struct Span {
  std::string name;     // "backward layer 3", "all_reduce bucket 0"
  std::string stream;   // "compute" or "comm" (or any other lane name)
  double start_us = 0;
  double end_us = 0;
};

class Tracer {
 public:
  static Tracer& instance();  // the process's (= the rank's) tracer

  void enable(bool on);
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }  // from any thread
  double now_us() const;  // since the epoch
  void add(const std::string& name, const std::string& stream, double start_us, double end_us);
  std::vector<Span> spans() const;
  void clear();
  // Barrier on comm, then restart the epoch (collective).
  void align(Communicator& comm);

 private:
  Tracer();
  mutable std::mutex mu_;
  std::atomic<bool> enabled_{false};  // read by communicators' progress threads too
  std::int64_t epoch_ns_ = 0;
  std::vector<Span> spans_;
};

// Records [construction, destruction) as one span when the tracer is enabled.
class TraceScope {
 public:
  TraceScope(std::string name, std::string stream = "compute");
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::string name_, stream_;
  double start_us_;
};

// The union of one rank's "compute" spans whose name starts with compute_prefix ("": any), as
// sorted disjoint [start_us, end_us) intervals: the time it was computing.
std::vector<std::pair<double, double>> busy_intervals(const std::vector<Span>& spans,
                                                      const std::string& compute_prefix = "");
// The time of [start_us, end_us) that the intervals cover.
double covered_us(const std::vector<std::pair<double, double>>& intervals, double start_us, double end_us);

// How much of some communication one rank hid behind computing, read off its spans (Tracer::spans):
// of the time the "comm" spans named one of comm_names ran, the fraction during which a "compute"
// span whose name starts with compute_prefix ("": any) ran. Compute spans that overlap each
// other (nested scopes) count once: their union. 0 when there is no such comm span. A comm span
// runs from when the communicator starts the op to when it completes, so it includes the time
// it waits for the peers: what the rank would lose if it did nothing meanwhile.
double hidden_fraction(const std::vector<Span>& spans, const std::vector<std::string>& comm_names,
                       const std::string& compute_prefix = "");

// Gathers every rank's spans on rank 0 of comm (collective) and writes there
//   dir/basename.json  Chrome trace events ("ph":"X", pid = rank, tid = stream)
//   dir/basename.csv   rank,stream,name,start_us,end_us
void write_trace(Communicator& comm, const std::string& dir, const std::string& basename);

// Serialisation used by write_trace, exposed for tests.
std::string spans_to_csv(int rank, const std::vector<Span>& spans, bool header);
std::string spans_to_chrome_json(const std::vector<std::pair<int, std::vector<Span>>>& per_rank);

}  // namespace usp
