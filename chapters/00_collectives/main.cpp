// ch00_collectives: the playbook's appendix A0, "Parallel Programming Crash Course", on CPU
// ranks talking over MPI. Three parts, run in this order by default:
//   demos  the nine collectives on small tensors, every rank's values before and after
//   ring   the hand-written ring all-reduce (exercise 00.1) checked against the library's:
//          same result, 2(n-1)/n of the tensor sent per rank, no library collective used
//   sweep  bandwidth vs message size for each collective and for the ring, nccl-tests style
// Writes <out>/summary.json and <out>/bandwidth.csv (the input of plots/ch00_bandwidth.py).
//
//   mpirun -np 4 build/bin/ch00_collectives [--part demos|ring|sweep|all] [--max-bytes 64M]
//   ./usp run 00
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "chapters/00_collectives/bandwidth_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "chapters/00_collectives/demos.hpp"
#include "chapters/00_collectives/ring_allreduce.hpp"

namespace {

using namespace usp;
using namespace usp::ch00;

// A0 has each rank sleep `rank` seconds before the barrier; a tenth of that shows the same.
constexpr double kBarrierStepSeconds = 0.1;

// The bytes rank r sends in the ring on a tensor of numel f32 elements: chunk (r-k) in each
// reduce-scatter step and chunk (r+1-k) in each all-gather step, k = 0..n-2.
std::uint64_t ring_bytes_sent(std::int64_t numel, int n, int r) {
  std::int64_t elements = 0;
  for (int k = 0; k < n - 1; ++k) {
    for (int c : {r - k, r + 1 - k}) {
      const auto [begin, end] = ring_chunk(numel, n, ((c % n) + n) % n);
      elements += end - begin;
    }
  }
  return static_cast<std::uint64_t>(elements) * sizeof(float);
}

// The value every rank agrees on: the largest of each rank's v (collective).
double max_over_ranks(Communicator& comm, double v) {
  Tensor t = Tensor::from_floats({static_cast<float>(v)}, {1});
  comm.all_reduce(t, ReduceOp::max);
  return t.to_floats()[0];
}

struct RingCheck {
  std::int64_t numel = 0;
  bool bit_equal = false;            // on every rank
  double max_abs_diff = 0;           // over every rank
  std::uint64_t bytes_sent = 0;      // rank 0, in the ring
  std::uint64_t bytes_formula = 0;   // rank 0: the exact chunk sum
  bool bytes_match = false;          // every rank sent its exact chunk sum
  std::uint64_t library_calls = 0;   // library collectives issued by the ring (should be 0)
};

// Runs the ring and the library all-reduce on the same input and compares (collective).
// The inputs are small integers, so every partial sum is exact in fp32 whatever the order of
// the additions: the two results must agree bit for bit.
RingCheck check_ring(Communicator& comm, std::int64_t numel) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> values(static_cast<std::size_t>(numel));
  for (std::int64_t i = 0; i < numel; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + r * 13) % 1000 - 500);
  Tensor ring = Tensor::from_floats(values, {numel});
  Tensor library = ring.clone(MemCategory::Temporary);

  const CommStats before = comm.stats();
  ring_all_reduce(comm, ring);
  const CommStats after = comm.stats();
  comm.all_reduce(library);

  RingCheck check;
  check.numel = numel;
  const float* a = ring.data<float>();
  const float* b = library.data<float>();
  double diff = 0;
  for (std::int64_t i = 0; i < numel; ++i) diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
  check.max_abs_diff = max_over_ranks(comm, diff);
  check.bit_equal = check.max_abs_diff == 0;

  const std::uint64_t sent = after.sent(CommOp::send) - before.sent(CommOp::send);
  const bool mine_match = sent == ring_bytes_sent(numel, n, r);
  check.bytes_match = max_over_ranks(comm, mine_match ? 0 : 1) == 0;
  check.bytes_sent = sent;  // as seen on this rank; rank 0 reports its own
  check.bytes_formula = ring_bytes_sent(numel, n, r);
  for (CommOp op : {CommOp::broadcast, CommOp::reduce, CommOp::all_reduce, CommOp::gather, CommOp::all_gather,
                    CommOp::scatter, CommOp::reduce_scatter, CommOp::all_to_all, CommOp::all_to_allv})
    check.library_calls += after.count(op) - before.count(op);
  return check;
}

void print_ring_check(const RingCheck& c, int n, std::ostream& out) {
  const std::uint64_t payload = static_cast<std::uint64_t>(c.numel) * sizeof(float);
  out << "== ring all-reduce vs library all-reduce (" << n << " ranks, " << c.numel << " floats) ==\n"
      << "  results equal bit for bit: " << (c.bit_equal ? "yes" : "NO") << " (max |ring - library| = "
      << c.max_abs_diff << ")\n"
      << "  bytes rank 0 sent in the ring: " << c.bytes_sent << " (2(n-1)/n of " << payload << " bytes = "
      << 2 * (n - 1) * payload / n << "; exact chunk sum " << c.bytes_formula << ")\n"
      << "  every rank sent its exact chunk sum: " << (c.bytes_match ? "yes" : "NO") << "\n"
      << "  library collectives called by the ring: " << c.library_calls << "\n\n"
      << std::flush;
}

void write_summary(const std::string& path, const Cli& cli, int n, const std::vector<std::string>& parts,
                   const std::vector<DemoOutcome>& demos, const RingCheck* ring,
                   const std::vector<SweepRow>& sweep) {
  JsonWriter w;
  w.begin_object();
  w.field("chapter", "00_collectives").field("world_size", n).key("flags").raw(cli.values_json());
  w.key("parts").array(parts);
  // Rank 0's values after each demo (for barrier: the seconds it waited).
  w.key("demos").begin_object();
  for (const auto& d : demos) {
    w.key(d.collective).begin_array();
    for (const auto& part : d.after) w.array(std::vector<double>(part.begin(), part.end()));
    w.end_array();
  }
  w.end_object();
  if (ring) {
    w.key("ring_check").begin_object();
    w.field("numel", ring->numel).field("bit_equal", ring->bit_equal).field("max_abs_diff", ring->max_abs_diff);
    w.field("bytes_sent_rank0", ring->bytes_sent).field("bytes_formula_rank0", ring->bytes_formula);
    w.field("bytes_match_all_ranks", ring->bytes_match).field("library_collective_calls", ring->library_calls);
    w.end_object();
  }
  if (!sweep.empty()) {
    w.key("sweep");
    bandwidth_table(sweep).write_json(w);
    std::int64_t largest_ring = 0;  // the size the ratio is taken at
    for (const auto& r : sweep)
      if (r.impl == "ring") largest_ring = std::max(largest_ring, r.bytes);
    w.field("ring_to_library_busbw_ratio", ring_to_library_ratio(sweep)).field("ratio_at_bytes", largest_ring);
  }
  w.end_object();
  w.write_file(path);
}

// Stops every rank with one message when the flags do not fit this chapter.
void check_flags(Runtime& rt, const Cli& cli) {
  rt.require(rt.size() >= 2,
             "chapter 00 needs at least 2 ranks: launch it with `mpirun -np 4 build/bin/ch00_collectives` "
             "or `./usp run 00`");
  rt.require(cli.get_int("min-bytes") <= cli.get_int("max-bytes"),
             "--min-bytes (" + std::to_string(cli.get_int("min-bytes")) + ") must be <= --max-bytes (" +
                 std::to_string(cli.get_int("max-bytes")) + ")");
  // A part's own flags, given while that part does not run, would be ignored.
  const std::string part = cli.get_string("part");
  for (const auto& [flag, owner] : {std::pair{"min-bytes", "sweep"}, std::pair{"max-bytes", "sweep"},
                                    std::pair{"iters", "sweep"}, std::pair{"warmup", "sweep"},
                                    std::pair{"check-numel", "ring"}})
    rt.require(part == "all" || part == owner || !cli.given(flag),
               std::string("--") + flag + " belongs to the " + owner + " part, and --part " + part + " does not run it");
  const std::string device = cli.get_string("device"), backend = cli.get_string("backend");
  rt.require((device == "auto" || device == "cpu") && (backend == "auto" || backend == "mpi"),
             "chapter 00 measures MPI collectives between CPU ranks: use --device cpu and --backend mpi "
             "(or leave them at auto)");
}

SweepConfig sweep_config(const Cli& cli) {
  SweepConfig config;
  config.min_bytes = cli.get_int("min-bytes");
  config.max_bytes = cli.get_int("max-bytes");
  config.iters = static_cast<int>(cli.get_int("iters"));
  config.warmup = static_cast<int>(cli.get_int("warmup"));
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](Runtime& rt) {
    Cli cli("ch00_collectives",
            "Appendix A0: the collectives on small tensors, a hand-written ring all-reduce, and a\n"
            "bandwidth sweep (nccl-tests style). Runs on CPU ranks over MPI; needs >= 2 ranks.");
    cli.add_common("out/00_collectives");
    cli.refuse("seed", "chapter 00's tensors hold values fixed by each rank's index (the demos, the ring check and "
                       "the sweep): nothing is random");
    cli.add_choice("part", "all", {"demos", "ring", "sweep", "all"}, "what to run");
    cli.add_int("min-bytes", 1 << 10, "smallest sweep message, bytes (K, M, G suffixes)", 4, std::int64_t{1} << 30);
    cli.add_int("max-bytes", 16 << 20, "largest sweep message, bytes (64M is the playbook-scale run)", 4,
                std::int64_t{1} << 30);
    cli.add_int("iters", 10, "timed runs per message size (the median is reported)", 1, 100000);
    cli.add_int("warmup", 3, "untimed runs per message size before timing", 0, 100000);
    cli.add_int("check-numel", 1000003, "elements of the ring-vs-library check", 1, std::int64_t{1} << 28);
    if (!rt.parse(cli, argc, argv)) return 0;
    check_flags(rt, cli);

    Communicator& comm = rt.world();
    const std::string part = cli.get_string("part"), out_dir = cli.get_string("out");
    const bool all = part == "all";
    std::ostream& out = std::cout;  // only rank 0 writes to it below
    std::vector<std::string> parts;
    std::vector<DemoOutcome> demos;
    RingCheck ring;
    std::string ring_skipped = "not run";
    std::vector<SweepRow> sweep;

    if (all || part == "demos") {
      parts.push_back("demos");
      demos = run_demos(comm, out, kBarrierStepSeconds);
    }
    if (all || part == "ring") {
      parts.push_back("ring");
      // An exercise stub throws on every rank before any message: all skip together.
      ring_skipped = rt.skip_if_not_implemented([&] { ring = check_ring(comm, cli.get_int("check-numel")); });
      if (rt.is_root() && ring_skipped.empty()) print_ring_check(ring, comm.size(), out);
      if (rt.is_root() && !ring_skipped.empty()) out << "== ring all-reduce: skipped, " << ring_skipped << " ==\n\n";
    }
    if (all || part == "sweep") {
      parts.push_back("sweep");
      sweep = run_sweep(comm, sweep_config(cli), out,
                        [&](const std::function<void()>& measure) { return rt.skip_if_not_implemented(measure); });
    }

    const bool ring_ran = ring_skipped.empty();
    if (rt.is_root()) {
      make_dirs(out_dir);
      write_summary(out_dir + "/summary.json", cli, comm.size(), parts, demos, ring_ran ? &ring : nullptr, sweep);
      if (!sweep.empty()) write_bandwidth_csv(out_dir + "/bandwidth.csv", sweep);
      out << "wrote " << out_dir << "/summary.json" << (sweep.empty() ? "" : " and bandwidth.csv") << "\n";
    }
    // A wrong ring is a failed run, not just a line in the log.
    if (ring_ran && (!ring.bit_equal || !ring.bytes_match || ring.library_calls != 0)) {
      if (rt.is_root()) std::cerr << "error: the ring all-reduce disagrees with the library (see above)\n";
      return 1;
    }
    return 0;
  });
}
