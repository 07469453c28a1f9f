// Chapter 00: the A0 demos give the playbook's numbers, the ring all-reduce (exercise 00.1)
// equals the library's and sends 2(n-1)/n of the tensor, and the sweep's bandwidth arithmetic
// follows nccl-tests. Every [mpi] case passes on any number of ranks (1..5) and issues the same
// collectives in the same order on every rank.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/00_collectives/bandwidth_sweep.hpp"
#include "common/comm/comm_volume.hpp"
#include "chapters/00_collectives/demos.hpp"
#include "chapters/00_collectives/ring_allreduce.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/filled_tensor.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch00;
using namespace usp::testing;

namespace {

using Floats = std::vector<float>;

// n(n+1)/2: the sum of (r+1) over n ranks, the factor A0's reduce and all-reduce produce.
float triangle(int n) { return static_cast<float>(n * (n + 1) / 2); }

// The sizes the ring is tried on: empty, fewer elements than ranks, odd, and large.
std::vector<std::int64_t> ring_sizes(int n) { return {0, 1, 2, 7, n - 1, n + 1, 1000, 1000003}; }

// Exercise 00.1's ring and the library's all-reduce on the same values of this rank: their results,
// the ring's after checking that it reduced the tensor in place ([numel] f32, as handed in).
struct Reduced {
  Floats ring, library;
};
Reduced ring_and_library(Communicator& comm, const Floats& values) {
  const auto numel = static_cast<std::int64_t>(values.size());
  Tensor ring = Tensor::from_floats(values, {numel});
  Tensor library = Tensor::from_floats(values, {numel});
  ring_all_reduce(comm, ring);
  comm.all_reduce(library);
  CHECK(tensor_problem(ring, "exercise 00.1: the tensor reduced in place, rank " + std::to_string(comm.rank()), {numel},
                       DType::f32) == "");
  return {ring.to_floats(), library.to_floats()};
}

// Bytes rank r sends in the ring: in each of the 2(n-1) steps one chunk of the header's layout,
// chunk (r-k) in reduce-scatter step k and chunk (r+1-k) in all-gather step k.
std::uint64_t expected_ring_bytes(std::int64_t numel, int n, int r) {
  std::uint64_t elements = 0;
  for (int k = 0; k < n - 1; ++k)
    for (int c : {r - k, r + 1 - k}) {
      const auto [begin, end] = ring_chunk(numel, n, ((c % n) + n) % n);
      elements += static_cast<std::uint64_t>(end - begin);
    }
  return elements * sizeof(float);
}

std::uint64_t library_collective_calls(const CommStats& s) {
  std::uint64_t calls = 0;
  for (CommOp op : {CommOp::broadcast, CommOp::reduce, CommOp::all_reduce, CommOp::gather, CommOp::all_gather,
                    CommOp::scatter, CommOp::reduce_scatter, CommOp::all_to_all, CommOp::all_to_allv})
    calls += s.count(op);
  return calls;
}

}  // namespace

// ---- the A0 demos ------------------------------------------------------------------------------

TEST_CASE("A0 broadcast, reduce and all-reduce", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  const float t = triangle(n);

  const DemoOutcome b = demo_broadcast(comm);
  CHECK(b.before == Held{r == 0 ? Floats{1, 2, 3, 4, 5} : Floats(5, 0.0f)});
  CHECK(b.after == Held{{1, 2, 3, 4, 5}});

  const DemoOutcome red = demo_reduce(comm);
  const float k = static_cast<float>(r + 1);
  CHECK(red.before == Held{{k, 2 * k, 3 * k, 4 * k, 5 * k}});
  if (r == 0) CHECK(red.after == Held{{t, 2 * t, 3 * t, 4 * t, 5 * t}});  // only the root's result is defined

  const DemoOutcome all = demo_all_reduce(comm);
  CHECK(all.after == Held{{t, 2 * t, 3 * t, 4 * t, 5 * t}});
  if (n == 3) {  // the playbook's printout
    CHECK(all.after == Held{{6, 12, 18, 24, 30}});
    if (r == 0) CHECK(red.after == Held{{6, 12, 18, 24, 30}});
  }
}

TEST_CASE("A0 gather, all-gather and scatter", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  Held ones_by_rank;  // [ones(5)*1, ones(5)*2, ..., ones(5)*n]
  for (int j = 0; j < n; ++j) ones_by_rank.push_back(Floats(5, static_cast<float>(j + 1)));

  const DemoOutcome g = demo_gather(comm);
  CHECK(g.before == Held{Floats(5, static_cast<float>(r + 1))});
  if (r == 0) CHECK(g.after == ones_by_rank);

  const DemoOutcome ag = demo_all_gather(comm);
  CHECK(ag.after == ones_by_rank);

  const DemoOutcome s = demo_scatter(comm);
  if (r == 0) CHECK(s.before == ones_by_rank);
  CHECK(s.after == Held{Floats(5, static_cast<float>(r + 1))});

  if (n == 3 && r == 0)  // the playbook's printout
    CHECK(ag.after == Held{{1, 1, 1, 1, 1}, {2, 2, 2, 2, 2}, {3, 3, 3, 3, 3}});
}

TEST_CASE("A0 reduce-scatter", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  const DemoOutcome rs = demo_reduce_scatter(comm);
  // Rank r's j-th input is [(r+1)*1, (r+1)*2]^(j+1); rank j receives the sum over r.
  REQUIRE(rs.before.size() == static_cast<std::size_t>(n));
  CHECK(rs.before[0] == Floats{static_cast<float>(r + 1), static_cast<float>(2 * (r + 1))});
  Floats expected = {0, 0};
  for (int q = 0; q < n; ++q)
    for (int i = 1; i <= 2; ++i) expected[static_cast<std::size_t>(i - 1)] += static_cast<float>(std::pow((q + 1) * i, r + 1));
  CHECK(rs.after == Held{expected});
  if (n == 3) {  // the playbook's printout
    const Held playbook[3] = {{{6, 12}}, {{14, 56}}, {{36, 288}}};
    CHECK(rs.after == playbook[r]);
  }
}

TEST_CASE("A0 barrier: nobody leaves before the last rank arrives", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  const double step = 0.05;
  const DemoOutcome b = demo_barrier(comm, step);
  CHECK(b.before[0][0] == Approx(r * step));
  // The last rank sleeps (n-1)*step before arriving; a little slack for the clocks' start,
  // since ranks leave the starting barrier at slightly different moments.
  CHECK(b.after[0][0] >= (n - 1) * step - 0.02);
}

TEST_CASE("all-to-all transposes the ranks' chunks", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  const DemoOutcome a = demo_all_to_all(comm);
  Floats before, after;
  for (int j = 0; j < n; ++j) {
    before.push_back(static_cast<float>(10 * (r + 1) + (j + 1)));  // element j is for rank j
    after.push_back(static_cast<float>(10 * (j + 1) + (r + 1)));   // element j came from rank j
  }
  CHECK(a.before == Held{before});
  CHECK(a.after == Held{after});
}

TEST_CASE("gather_strings collects every rank's text on rank 0 in rank order", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  // Different lengths, one empty, and bytes beyond ASCII survive the trip.
  const std::string mine = r == 1 ? "" : "rank " + std::to_string(r) + std::string(static_cast<std::size_t>(r), '*') + "\xc3\xa9";
  const std::vector<std::string> got = gather_strings(comm, mine);
  if (r != 0) {
    CHECK(got.empty());
    return;
  }
  REQUIRE(got.size() == static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q)
    CHECK(got[static_cast<std::size_t>(q)] ==
          (q == 1 ? "" : "rank " + std::to_string(q) + std::string(static_cast<std::size_t>(q), '*') + "\xc3\xa9"));
}

TEST_CASE("print_demo prints every rank's before and after once, in rank order", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  std::ostringstream out;
  print_demo(comm, demo_all_reduce(comm), out);
  const std::string text = out.str();
  if (r != 0) {
    CHECK(text.empty());
    return;
  }
  std::size_t previous = 0;
  for (const char* when : {"Before", "After"})
    for (int q = 0; q < n; ++q) {
      const std::string line = std::string(when) + " all_reduce on rank " + std::to_string(q) + ": ";
      const std::size_t at = text.find(line);
      CHECK(at != std::string::npos);
      CHECK(text.find(line, at + 1) == std::string::npos);  // once
      CHECK(at >= previous);                                // in order
      previous = at;
    }
  if (n == 3) CHECK(text.find("After all_reduce on rank 2: [6, 12, 18, 24, 30]") != std::string::npos);
}

// ---- exercise 00.1: the ring all-reduce ----------------------------------------------------

TEST_CASE("ring_chunk cuts numel into n contiguous chunks differing by at most one", "[ch00]") {
  for (std::int64_t numel : {0, 1, 2, 7, 10, 1000003})
    for (int n : {1, 2, 3, 4, 5}) {
      std::int64_t next = 0, smallest = numel, largest = 0;
      for (int i = 0; i < n; ++i) {
        const auto [begin, end] = ring_chunk(numel, n, i);
        CHECK(begin == next);
        next = end;
        smallest = std::min(smallest, end - begin);
        largest = std::max(largest, end - begin);
      }
      CHECK(next == numel);
      CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("exercise 00.1: the ring all-reduce equals the library's bit for bit on integer values", "[ch00][mpi]") {
  // Integers of magnitude < 1000 summed over <= 5 ranks stay far below 2^24, where every
  // partial sum is exact in fp32: any order of addition gives the same bits.
  auto& comm = world();
  const int r = comm.rank();
  for (std::int64_t numel : ring_sizes(comm.size())) {
    CAPTURE(numel);
    Floats values(static_cast<std::size_t>(numel));
    for (std::int64_t i = 0; i < numel; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>((i * 31 + r * 17) % 1999 - 999);
    const Reduced got = ring_and_library(comm, values);
    CHECK(elementwise_mismatch(got.ring, got.library, Tolerance::exact(), r) == "");
  }
}

TEST_CASE("exercise 00.1: the ring all-reduce agrees with the library within fp32 reduction-order error", "[ch00][mpi]") {
  // With arbitrary floats the ring and MPI add the same n values in different orders. Any
  // order's fp32 sum is within (n-1)·u·Σ|x_r| of the exact sum (u = 2^-24, the unit roundoff),
  // so two orders differ by at most 2(n-1)·u·Σ|x_r| — checked element by element.
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  auto value = [](std::int64_t i, int rank) {
    return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + rank) * (1.0 + rank) / 3.0);
  };
  const double u = std::ldexp(1.0, -24);
  for (std::int64_t numel : ring_sizes(n)) {
    CAPTURE(numel);
    Floats values(static_cast<std::size_t>(numel));
    for (std::int64_t i = 0; i < numel; ++i) values[static_cast<std::size_t>(i)] = value(i, r);
    const Reduced got = ring_and_library(comm, values);
    std::vector<double> bound(static_cast<std::size_t>(numel));
    for (std::int64_t i = 0; i < numel; ++i) {
      double magnitude = 0;
      for (int q = 0; q < n; ++q) magnitude += std::fabs(static_cast<double>(value(i, q)));
      bound[static_cast<std::size_t>(i)] = 2.0 * (n - 1) * u * magnitude;
    }
    CHECK(elementwise_mismatch(got.ring, got.library, bound, r) == "");
  }
}

TEST_CASE("exercise 00.1: the ring all-reduce sends 2(n-1)/n of the tensor per rank, over send/recv only", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size(), r = comm.rank();
  std::vector<std::int64_t> sizes = ring_sizes(n);
  sizes.push_back(1000 * n);  // n divides the size: exactly 2(n-1)/n of the payload
  for (std::int64_t numel : sizes) {
    CAPTURE(numel);
    Tensor t = Tensor::zeros({numel});
    const CommStats before = comm.stats();
    ring_all_reduce(comm, t);
    CHECK(tensor_problem(t, "exercise 00.1: the tensor reduced in place, rank " + std::to_string(r), {numel},
                         DType::f32) == "");
    const CommStats after = comm.stats();
    const std::uint64_t sent = after.sent(CommOp::send) - before.sent(CommOp::send);
    CHECK(sent == expected_ring_bytes(numel, n, r));
    if (numel % n == 0) CHECK(sent == 2 * static_cast<std::uint64_t>(n - 1) * t.nbytes() / static_cast<std::uint64_t>(n));
    // No library collective inside: only point-to-point messages, one per step each way.
    CHECK(library_collective_calls(after) == library_collective_calls(before));
    CHECK(after.count(CommOp::send) - before.count(CommOp::send) == static_cast<std::uint64_t>(2 * (n - 1)));
  }
}

// ---- the bandwidth sweep ------------------------------------------------------------------------

TEST_CASE("sweep sizes, payloads and bandwidth arithmetic follow nccl-tests", "[ch00]") {
  CHECK(sweep_sizes(1024, 8192) == std::vector<std::int64_t>{1024, 2048, 4096, 8192});
  CHECK(sweep_sizes(1024, 5000) == std::vector<std::int64_t>{1024, 2048, 4096});
  CHECK(sweep_sizes(64, 64) == std::vector<std::int64_t>{64});

  CHECK(payload_count(CommOp::all_reduce, 1024, 3) == 256);
  CHECK(payload_count(CommOp::broadcast, 2, 3) == 1);        // at least one element
  CHECK(payload_count(CommOp::all_gather, 1024, 3) == 255);  // a multiple of n
  CHECK(payload_count(CommOp::reduce_scatter, 1024, 4) == 256);
  CHECK(payload_count(CommOp::all_to_all, 4, 5) == 5);       // one element per rank at least

  CHECK(algbw_GBps(1'000'000'000, 1e6) == Approx(1.0));  // 1 GB in one second
  CHECK(algbw_GBps(4096, 2.0) == Approx(2.048));
  for (int n : {2, 3, 4, 5, 8}) {
    CHECK(busbw_GBps(CommOp::all_reduce, n, 1.0) == Approx(2.0 * (n - 1) / n));
    CHECK(busbw_GBps(CommOp::all_gather, n, 1.0) == Approx(static_cast<double>(n - 1) / n));
    CHECK(busbw_GBps(CommOp::reduce_scatter, n, 1.0) == Approx(static_cast<double>(n - 1) / n));
    CHECK(busbw_GBps(CommOp::all_to_all, n, 1.0) == Approx(static_cast<double>(n - 1) / n));
    CHECK(busbw_GBps(CommOp::broadcast, n, 1.0) == Approx(1.0));
    CHECK(busbw_GBps(CommOp::reduce, n, 1.0) == Approx(1.0));
  }
}

TEST_CASE("ring_to_library_ratio compares all-reduce busbw at the largest common size", "[ch00]") {
  const std::vector<SweepRow> rows = {
      {"all_reduce", "library", 1024, 256, 10, 0, 2.0},  {"all_reduce", "library", 2048, 512, 10, 0, 4.0},
      {"all_reduce", "ring", 1024, 256, 10, 0, 1.0},     {"all_reduce", "ring", 2048, 512, 10, 0, 3.0},
      {"all_gather", "library", 4096, 1024, 10, 0, 9.0},
  };
  CHECK(ring_to_library_ratio(rows) == Approx(0.75));
  CHECK(ring_to_library_ratio({rows[0], rows[1], rows[4]}) == 0.0);  // no ring measured
}

TEST_CASE("a small sweep measures every collective and writes bandwidth.csv", "[ch00][mpi]") {
  auto& comm = world();
  const int n = comm.size();
  SweepConfig config;
  config.min_bytes = 1024;
  config.max_bytes = 4096;
  config.warmup = 1;
  config.iters = 3;
  std::ostringstream table;
  const std::vector<SweepRow> rows = run_sweep(comm, config, table);

  // 6 subjects (library all_reduce, ring all_reduce, all_gather, reduce_scatter, broadcast,
  // all_to_all) × 3 sizes.
  CHECK(rows.size() == 18);
  for (const auto& row : rows) {
    CAPTURE(row.collective, row.impl, row.bytes);
    CHECK(row.time_us >= 0);
    CHECK(row.bytes == row.count * 4);
    CHECK(row.algbw_GBps == Approx(algbw_GBps(row.bytes, row.time_us)));
  }
  int ring_rows = 0;
  for (const auto& row : rows) ring_rows += row.impl == "ring";
  CHECK(ring_rows == 3);
  if (comm.rank() == 0) {
    // On one rank nothing crosses a link (busbw factor 0), so there is no ratio to print.
    const std::string ratio_line = n > 1 ? "ring all-reduce busbw / library all-reduce busbw = "
                                         : "ring all-reduce busbw / library all-reduce busbw: not measured";
    CHECK(table.str().find(ratio_line) != std::string::npos);
    const std::string path = "ch00_test_bandwidth_" + std::to_string(n) + ".csv";
    write_bandwidth_csv(path, rows);
    std::ifstream csv(path);
    std::string header, line;
    std::getline(csv, header);
    CHECK(header == "collective,impl,bytes,time_us,algbw_GBps,busbw_GBps");
    int lines = 0;
    while (std::getline(csv, line)) ++lines;
    CHECK(lines == 18);
    std::remove(path.c_str());
  } else {
    CHECK(table.str().empty());
  }
}
