// A bandwidth sweep in the style of nccl-tests: each collective at message sizes doubling from
// min_bytes to max_bytes, timed, and reported as algorithm and bus bandwidth.
//
//   time    one op, from a barrier (so every rank starts together) to its return; the median
//           over `iters` runs after `warmup` untimed ones, then the slowest rank's median
//           (the op is over when the last rank has its result)
//   algbw   bytes / time, with bytes the op's payload (comm_volume.hpp: the tensor for
//           all_reduce and broadcast, the gathered output for all_gather, the full input for
//           reduce_scatter and all_to_all)
//   busbw   algbw · busbw_factor(op, n): what each rank's link carried under the
//           bandwidth-optimal algorithm, e.g. 2(n-1)/n for all_reduce. It does not depend on n
//           for an ideal ring, so it can be compared with the hardware's peak link bandwidth.
//
// The hand-written ring all-reduce (ring_allreduce.hpp) is swept next to the library one, on
// the same sizes, so the two busbw columns compare like for like.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/report/table.hpp"

namespace usp::ch00 {

struct SweepConfig {
  std::int64_t min_bytes = 1 << 10;
  std::int64_t max_bytes = 16 << 20;
  int warmup = 3;  // untimed runs per size (first-touch of buffers, connection set-up)
  int iters = 10;  // timed runs per size
};

// One line of the table and of bandwidth.csv.
struct SweepRow {
  std::string collective;  // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"
  std::string impl;        // "library" (the communicator's op) or "ring" (ring_all_reduce)
  std::int64_t bytes = 0;  // payload, as above
  std::int64_t count = 0;  // f32 elements in the payload
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

// min_bytes, 2·min_bytes, 4·min_bytes, ... while <= max_bytes.
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes);

// The f32 elements of a `bytes` payload of op on n ranks: bytes/4, rounded down to a multiple of
// n for the ops that cut it into n equal chunks (all_gather, reduce_scatter, all_to_all), and at
// least one element (one per rank for the chunked ops).
std::int64_t payload_count(CommOp op, std::int64_t bytes, int n);

// GB/s (10^9 bytes per second) from bytes moved in time_us microseconds.
double algbw_GBps(std::int64_t bytes, double time_us);
// algbw · busbw_factor(op, n).
double busbw_GBps(CommOp op, int n, double algbw);

// How the sweep runs each subject's measurements: the chapter passes its Runtime's
// skip_if_not_implemented, so that a ring whose exercise is a stub is skipped on every rank
// together (the stub's message returned, "" when it ran). Without one, a stub's NotImplemented
// propagates.
using PartRunner = std::function<std::string(const std::function<void()>& part)>;

// Runs the whole sweep (collective: every rank calls it) and prints one nccl-tests-like table
// per collective on rank 0. Every rank returns the same rows.
std::vector<SweepRow> run_sweep(Communicator& comm, const SweepConfig& config, std::ostream& out,
                                const PartRunner& run_part = nullptr);

// The rows as one report table: the terminal lines above, bandwidth.csv
// (collective,impl,bytes,time_us,algbw_GBps,busbw_GBps) and summary.json's "sweep".
report::Table bandwidth_table(const std::vector<SweepRow>& rows = {});
void write_bandwidth_csv(const std::string& path, const std::vector<SweepRow>& rows);

// At the largest size where both exist: ring all_reduce busbw / library all_reduce busbw
// (0 when the sweep has no ring rows).
double ring_to_library_ratio(const std::vector<SweepRow>& rows);

}  // namespace usp::ch00
