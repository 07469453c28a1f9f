#include "chapters/00_collectives/bandwidth_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "common/comm/comm_volume.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/report/median.hpp"
#include "chapters/00_collectives/ring_allreduce.hpp"

namespace usp::ch00 {

namespace {

// What is being measured: one collective, by one implementation.
struct Subject {
  CommOp op;
  std::string impl;  // "library" or "ring"
};

// A zero-filled f32 buffer on comm's device. Zeros stay zeros under any number of repeated
// sums, so the ops can run again and again on the same buffers without overflowing.
Tensor comm_buffer(const Communicator& comm, std::int64_t count) {
  return Tensor::zeros({count}, DType::f32, MemCategory::CommBuffer, comm.device());
}

// The op under test at `count` payload elements, on buffers allocated here, once, so that no
// timed run allocates. The returned function runs one op.
std::function<void()> prepare(Communicator& comm, const Subject& s, std::int64_t count) {
  const int n = comm.size();
  switch (s.op) {
    case CommOp::all_reduce: {
      Tensor t = comm_buffer(comm, count);  // [count], in place
      if (s.impl == "ring") return [&comm, t]() mutable { ring_all_reduce(comm, t); };
      return [&comm, t]() mutable { comm.all_reduce(t); };
    }
    case CommOp::broadcast: {
      Tensor t = comm_buffer(comm, count);  // [count], in place, from rank 0
      return [&comm, t]() mutable { comm.broadcast(t, 0); };
    }
    case CommOp::all_gather: {
      Tensor in = comm_buffer(comm, count / n), out = comm_buffer(comm, count);  // [count/n] -> [count]
      return [&comm, in, out]() mutable { comm.all_gather(in, out); };
    }
    case CommOp::reduce_scatter: {
      Tensor in = comm_buffer(comm, count), out = comm_buffer(comm, count / n);  // [count] -> [count/n]
      return [&comm, in, out]() mutable { comm.reduce_scatter(in, out); };
    }
    case CommOp::all_to_all: {
      Tensor in = comm_buffer(comm, count), out = comm_buffer(comm, count);  // n chunks of count/n each way
      return [&comm, in, out]() mutable { comm.all_to_all(in, out); };
    }
    default: throw Error(std::string("bandwidth sweep: no benchmark for ") + comm_op_name(s.op));
  }
}

// Microseconds of one run of op: warm-up, then `iters` runs each started by a barrier; this
// rank's median, then the maximum over ranks (collective).
double time_op(Communicator& comm, const std::function<void()>& op, const SweepConfig& config) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < config.warmup; ++i) {
    comm.barrier();
    op();
  }
  std::vector<double> runs_us;
  for (int i = 0; i < config.iters; ++i) {
    comm.barrier();  // everyone starts together: we time the op, not the stragglers before it
    const auto start = clock::now();
    op();
    runs_us.push_back(std::chrono::duration<double, std::micro>(clock::now() - start).count());
  }
  Tensor slowest = Tensor::from_floats({static_cast<float>(report::median(runs_us))}, {1});
  if (!comm.device().is_cpu()) slowest = slowest.to(comm.device());
  comm.all_reduce(slowest, ReduceOp::max);
  return slowest.to_floats()[0];
}

void print_title(std::ostream& out, const Subject& s, int n, const SweepConfig& config) {
  char line[160];
  std::snprintf(line, sizeof line, "# %s (%s): %d ranks, median of %d runs after %d warm-up\n",
                comm_op_name(s.op), s.impl.c_str(), n, config.iters, config.warmup);
  out << line;
}

}  // namespace

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes) {
  USP_CHECK(min_bytes >= 1, "sweep_sizes: min_bytes must be positive");
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = min_bytes; b <= max_bytes; b *= 2) sizes.push_back(b);
  return sizes;
}

std::int64_t payload_count(CommOp op, std::int64_t bytes, int n) {
  const std::int64_t elements = bytes / static_cast<std::int64_t>(sizeof(float));
  const bool chunked = op == CommOp::all_gather || op == CommOp::reduce_scatter || op == CommOp::all_to_all;
  if (!chunked) return std::max<std::int64_t>(1, elements);
  return std::max<std::int64_t>(n, elements / n * n);
}

double algbw_GBps(std::int64_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e-6) / 1e9 : 0.0;
}

double busbw_GBps(CommOp op, int n, double algbw) { return algbw * busbw_factor(op, n); }

std::vector<SweepRow> run_sweep(Communicator& comm, const SweepConfig& config, std::ostream& out,
                                const PartRunner& run_part) {
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  // The ring adds chunks on the host, so it joins the sweep when the communicator's tensors
  // live on the CPU.
  std::vector<Subject> subjects = {{CommOp::all_reduce, "library"}};
  if (comm.device().is_cpu()) subjects.push_back({CommOp::all_reduce, "ring"});
  for (CommOp op : {CommOp::all_gather, CommOp::reduce_scatter, CommOp::broadcast, CommOp::all_to_all})
    subjects.push_back({op, "library"});

  std::vector<SweepRow> rows;
  for (const Subject& s : subjects) {
    if (root) {
      print_title(out, s, n, config);
      bandwidth_table().print_header(out);
    }
    const auto measure = [&] {
      for (std::int64_t size : sweep_sizes(config.min_bytes, config.max_bytes)) {
        const std::int64_t count = payload_count(s.op, size, n);
        SweepRow row{comm_op_name(s.op), s.impl, count * static_cast<std::int64_t>(sizeof(float)), count, 0, 0, 0};
        row.time_us = time_op(comm, prepare(comm, s, count), config);
        row.algbw_GBps = algbw_GBps(row.bytes, row.time_us);
        row.busbw_GBps = busbw_GBps(s.op, n, row.algbw_GBps);
        if (root) bandwidth_table({row}).print_row(out, 0);
        rows.push_back(row);
      }
    };
    // A stub ring throws on every rank before sending anything: the sweep goes on without it.
    const std::string skipped = run_part ? run_part(measure) : (measure(), std::string());
    if (root && !skipped.empty()) out << "# skipped: " << skipped << "\n";
    if (root) out << "\n";
  }
  if (root) {
    const double ratio = ring_to_library_ratio(rows);
    const std::int64_t largest = sweep_sizes(config.min_bytes, config.max_bytes).back();
    char line[160];
    if (ratio > 0)
      std::snprintf(line, sizeof line, "ring all-reduce busbw / library all-reduce busbw = %.2f (at %lld bytes)\n",
                    ratio, static_cast<long long>(payload_count(CommOp::all_reduce, largest, n) * 4));
    else
      std::snprintf(line, sizeof line, "ring all-reduce busbw / library all-reduce busbw: not measured\n");
    out << line << std::flush;
  }
  return rows;
}

report::Table bandwidth_table(const std::vector<SweepRow>& rows) {
  // The terminal: nccl-tests' columns; the files: the row's identity and full-precision numbers.
  report::Table t({{.key = "collective", .header = ""},
                   {.key = "impl", .header = ""},
                   {.key = "bytes", .header = "size", .format = "%12lld"},
                   {.key = "count", .header = "count", .format = " %12lld", .csv = false, .json = false},
                   {.key = "type", .header = "type", .format = " %6s", .csv = false, .json = false},
                   {.key = "time_us", .header = "time_us", .format = " %12.1f", .csv_format = "%.3f"},
                   {.key = "algbw_GBps", .header = "algbw_GB/s", .format = " %11.3f", .csv_format = "%.6f"},
                   {.key = "busbw_GBps", .header = "busbw_GB/s", .format = " %11.3f", .csv_format = "%.6f"}},
                  "  ", "# ");
  for (const SweepRow& r : rows)
    t.add({r.collective, r.impl, r.bytes, r.count, "float", r.time_us, r.algbw_GBps, r.busbw_GBps});
  return t;
}

void write_bandwidth_csv(const std::string& path, const std::vector<SweepRow>& rows) {
  bandwidth_table(rows).write_csv(path);
}

double ring_to_library_ratio(const std::vector<SweepRow>& rows) {
  // The largest all_reduce payload measured by both implementations.
  const SweepRow* ring = nullptr;
  const SweepRow* library = nullptr;
  for (const auto& r : rows) {
    if (r.collective != "all_reduce") continue;
    const SweepRow*& slot = r.impl == "ring" ? ring : library;
    if (!slot || r.bytes > slot->bytes) slot = &r;
  }
  if (!ring || !library || ring->bytes != library->bytes || library->busbw_GBps <= 0) return 0.0;
  return ring->busbw_GBps / library->busbw_GBps;
}

}  // namespace usp::ch00
