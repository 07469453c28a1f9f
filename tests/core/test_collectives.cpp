// The communicator's collectives on the world the tests run in (MPI with 1..5 ranks, or the
// one-rank self communicator without MPI). Every expected value comes from a formula of the
// sending rank and the element index, evaluated here for every rank, so no test trusts one
// collective to check another. Every rank runs every collective of every test case in the same
// order, whatever its rank and whatever fails: checks are CHECKs, never REQUIREs, and branches
// on the rank only choose what to expect, or point-to-point partners.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/comm/comm_volume.hpp"
#include "common/comm/communicator.hpp"
#include "tests/support/test_world.hpp"

#if defined(USP_HAVE_MPI)
#include "common/comm/mpi_communicator.hpp"
#endif

using namespace usp;

namespace {

Communicator& world() { return usp::testing::world(); }

const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min};

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

// Rank r's contribution to element i: small signed integers, exact in f32, bf16 and f16, and
// their sums over up to five ranks too (at most 15 * 6 = 90).
float contribution(int r, std::int64_t i) { return static_cast<float>((r + 1) * (static_cast<int>(i % 13) - 6)); }

// The reduction over ranks 0..n-1 of f(r), evaluated directly. i32 averages truncate as C++
// integer division does (the documented rule); float averages divide once.
double reduce_reference(ReduceOp op, int n, const std::function<double(int)>& f, bool integer = false) {
  double acc = f(0);
  for (int r = 1; r < n; ++r) {
    const double v = f(r);
    if (op == ReduceOp::max) acc = std::max(acc, v);
    else if (op == ReduceOp::min) acc = std::min(acc, v);
    else acc += v;
  }
  if (op == ReduceOp::avg) acc = integer ? static_cast<double>(static_cast<long long>(acc) / n) : acc / n;
  return acc;
}

// Every rank's contribution to element i, reduced; and the same rounded once to f32, as an f32
// tensor holds the result.
double reduced(ReduceOp op, int n, std::int64_t i, bool integer = false) {
  return reduce_reference(op, n, [&](int r) { return contribution(r, i); }, integer);
}
double reduced_f32(ReduceOp op, int n, std::int64_t i) { return static_cast<float>(reduced(op, n, i)); }

Tensor make(DType dtype, std::int64_t n, const std::function<float(std::int64_t)>& f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
  return Tensor::from_floats(v, {n}, dtype);
}

// Checks every element of t against expected(i), reporting the count and the first mismatch.
void check_values(const Tensor& t, const std::function<double(std::int64_t)>& expected, const std::string& what) {
  const std::vector<float> v = t.to_floats();
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (static_cast<double>(v[i]) != expected(static_cast<std::int64_t>(i))) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  std::ostringstream info;
  info << what << " [rank " << world().rank() << " of " << world().size() << "]";
  if (first >= 0)
    info << ": " << bad << " wrong elements, first at " << first << " (got " << v[first] << ", expected "
         << expected(first) << ")";
  INFO(info.str());
  CHECK(bad == 0);
}

// Byte and call accounting of one op: snapshot before, check after against comm_volume().
class Counted {
 public:
  Counted(Communicator& c, CommOp op) : c_(c), op_(op), before_(c.stats()) {}
  void check(std::uint64_t payload_bytes, int root = 0) const {
    const CommVolume v = comm_volume(op_, payload_bytes, c_.size(), c_.rank(), root);
    check_exact(v.payload_bytes, v.bytes_sent);
  }
  void check_exact(std::uint64_t payload_bytes, std::uint64_t bytes_sent) const {
    const int i = static_cast<int>(op_);
    INFO(comm_op_name(op_) << " on rank " << c_.rank() << " of " << c_.size());
    CHECK(c_.stats().calls[i] - before_.calls[i] == 1);
    CHECK(c_.stats().payload_bytes[i] - before_.payload_bytes[i] == payload_bytes);
    CHECK(c_.stats().bytes_sent[i] - before_.bytes_sent[i] == bytes_sent);
  }

 private:
  Communicator& c_;
  CommOp op_;
  CommStats before_;
};

std::uint64_t total_calls(const Communicator& c) {
  std::uint64_t n = 0;
  for (auto k : c.stats().calls) n += k;
  return n;
}

}  // namespace

TEST_CASE("all_reduce: every op, sync and async, sizes 1, 7 and 1000003", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  for (std::int64_t numel : {1, 7, 1000003}) {
    for (ReduceOp op : kOps) {
      for (bool async : {false, true}) {
        Tensor t = make(DType::f32, numel, [&](std::int64_t i) { return contribution(me, i); });
        Counted counted(w, CommOp::all_reduce);
        if (async) {
          WorkHandle h = w.all_reduce_async(t, op);
          h->wait();
          CHECK(h->test());
        } else {
          w.all_reduce(t, op);
        }
        counted.check(t.nbytes());
        check_values(t, [&](std::int64_t i) { return reduced_f32(op, n, i); },
                     std::string("all_reduce ") + op_name(op) + (async ? " async of " : " of ") +
                         std::to_string(numel));
      }
    }
  }
}

TEST_CASE("all_reduce of i32, bf16 and f16 tensors", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  for (DType dtype : {DType::i32, DType::bf16, DType::f16}) {
    for (ReduceOp op : kOps) {
      for (std::int64_t numel : {7, 1003}) {
        Tensor t = make(dtype, numel, [&](std::int64_t i) { return contribution(me, i); });
        Counted counted(w, CommOp::all_reduce);
        w.all_reduce_async(t, op)->wait();
        counted.check(t.nbytes());
        check_values(t, [&](std::int64_t i) { return reduced(op, n, i, dtype == DType::i32); },
                     std::string("all_reduce ") + op_name(op) + " of " + dtype_name(dtype));
      }
    }
  }
}

TEST_CASE("broadcast from every root, any dtype", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  auto value = [](int root, std::int64_t i) { return static_cast<float>(root * 7 + (i % 11)) + 0.5f; };
  for (int root = 0; root < n; ++root) {
    for (std::int64_t numel : {1, 7, 1000003}) {
      for (bool async : {false, true}) {
        Tensor t = make(DType::f32, numel, [&](std::int64_t i) { return me == root ? value(root, i) : -1.0f; });
        Counted counted(w, CommOp::broadcast);
        if (async) w.broadcast_async(t, root)->wait();
        else w.broadcast(t, root);
        counted.check(t.nbytes(), root);
        check_values(t, [&](std::int64_t i) { return value(root, i); },
                     "broadcast of " + std::to_string(numel) + " from " + std::to_string(root));
      }
    }
    // Data movement never looks at values: every dtype goes through, bit for bit.
    for (DType dtype : {DType::bf16, DType::f16, DType::e4m3, DType::e5m2, DType::i32}) {
      auto v = [&](std::int64_t i) { return static_cast<float>(root + i); };
      const std::vector<float> sent = make(dtype, 9, v).to_floats();  // as the dtype holds them
      Tensor t = make(dtype, 9, [&](std::int64_t i) { return me == root ? v(i) : 0.0f; });
      w.broadcast(t, root);
      check_values(t, [&](std::int64_t i) { return static_cast<double>(sent[static_cast<std::size_t>(i)]); },
                   std::string("broadcast of ") + dtype_name(dtype));
    }
  }
}

TEST_CASE("reduce to every root with every op", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  for (int root = 0; root < n; ++root) {
    for (ReduceOp op : kOps) {
      for (std::int64_t numel : {1, 7}) {
        for (bool async : {false, true}) {
          Tensor t = make(DType::f32, numel, [&](std::int64_t i) { return contribution(me, i); });
          Counted counted(w, CommOp::reduce);
          if (async) w.reduce_async(t, root, op)->wait();
          else w.reduce(t, root, op);
          counted.check(t.nbytes(), root);
          if (me == root)
            check_values(t, [&](std::int64_t i) { return reduced_f32(op, n, i); },
                         std::string("reduce ") + op_name(op) + " to " + std::to_string(root));
        }
      }
    }
  }
  // One large reduce, and the narrow types, to the last rank.
  const int root = n - 1;
  Tensor big = make(DType::f32, 1000003, [&](std::int64_t i) { return contribution(me, i); });
  w.reduce(big, root, ReduceOp::sum);
  if (me == root)
    check_values(big, [&](std::int64_t i) { return reduced(ReduceOp::sum, n, i); }, "reduce of 1000003");
  for (DType dtype : {DType::i32, DType::bf16}) {
    Tensor t = make(dtype, 31, [&](std::int64_t i) { return contribution(me, i); });
    w.reduce(t, root, ReduceOp::avg);
    if (me == root)
      check_values(t, [&](std::int64_t i) { return reduced(ReduceOp::avg, n, i, dtype == DType::i32); },
                   std::string("reduce avg of ") + dtype_name(dtype));
  }
}

TEST_CASE("gather to every root and all_gather, odd chunk sizes", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  auto value = [](int r, std::int64_t j) { return static_cast<float>(r * 1000 + j % 997); };
  for (std::int64_t chunk : {1, 3, 1001}) {
    for (DType dtype : {DType::f32, DType::i32, DType::bf16}) {
      // bf16 holds integers exactly only up to 256.
      auto v = [&](int r, std::int64_t j) {
        return dtype == DType::bf16 ? static_cast<float>(r * 16 + j % 16) : value(r, j);
      };
      const Tensor in = make(dtype, chunk, [&](std::int64_t j) { return v(me, j); });
      auto expected = [&](std::int64_t i) { return static_cast<double>(v(static_cast<int>(i / chunk), i % chunk)); };
      const std::string what = std::string(dtype_name(dtype)) + " chunk " + std::to_string(chunk);

      for (int root = 0; root < n; ++root) {
        // Off the root, out is not needed at all: an undefined tensor will do.
        Tensor out = me == root ? Tensor::zeros({n * chunk}, dtype) : Tensor();
        Counted counted(w, CommOp::gather);
        w.gather_async(in, out, root)->wait();
        counted.check(in.nbytes() * n, root);
        if (me == root) check_values(out, expected, "gather to " + std::to_string(root) + " " + what);
      }
      for (bool async : {false, true}) {
        Tensor out = Tensor::zeros({n * chunk}, dtype);
        Counted counted(w, CommOp::all_gather);
        if (async) w.all_gather_async(in, out)->wait();
        else w.all_gather(in, out);
        counted.check(out.nbytes());
        check_values(out, expected, std::string("all_gather ") + (async ? "async " : "") + what);
      }
    }
  }
}

TEST_CASE("gathers where the input lives inside the output", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  const std::int64_t chunk = 5;
  auto value = [](int r, std::int64_t j) { return static_cast<float>(r * 10 + j); };
  auto expected = [&](std::int64_t i) { return static_cast<double>(value(static_cast<int>(i / chunk), i % chunk)); };

  // ZeRO's pattern: the shard is a view of its own slot of the flat buffer (MPI_IN_PLACE).
  Tensor flat = Tensor::zeros({n * chunk});
  Tensor shard = flat.view(me * chunk, {chunk});
  shard.copy_from(make(DType::f32, chunk, [&](std::int64_t j) { return value(me, j); }));
  w.all_gather(shard, flat);
  check_values(flat, expected, "all_gather from a view of the own slot");

  // The input overlaps the output elsewhere: the backend must copy it aside first.
  Tensor flat2 = Tensor::zeros({n * chunk});
  Tensor front = flat2.view(0, {chunk});
  front.copy_from(make(DType::f32, chunk, [&](std::int64_t j) { return value(me, j); }));
  w.all_gather(front, flat2);
  check_values(flat2, expected, "all_gather from an overlapping view");

  // gather in place on each root; scatter in place likewise.
  for (int root = 0; root < n; ++root) {
    Tensor g = Tensor::zeros({n * chunk});
    Tensor mine = me == root ? g.view(me * chunk, {chunk}) : Tensor::empty({chunk});
    mine.copy_from(make(DType::f32, chunk, [&](std::int64_t j) { return value(me, j); }));
    Tensor out = me == root ? g : Tensor();
    w.gather(mine, out, root);
    if (me == root) check_values(g, expected, "gather in place to " + std::to_string(root));

    Tensor s = me == root ? make(DType::f32, n * chunk, [&](std::int64_t i) { return static_cast<float>(i); })
                          : Tensor();
    Tensor part = me == root ? s.view(root * chunk, {chunk}) : Tensor::zeros({chunk});
    w.scatter(s, part, root);
    check_values(part, [&](std::int64_t j) { return static_cast<double>(me * chunk + j); },
                 "scatter in place from " + std::to_string(root));
  }
}

TEST_CASE("scatter from every root, odd chunk sizes", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  for (std::int64_t chunk : {1, 5, 999}) {
    for (int root = 0; root < n; ++root) {
      for (bool async : {false, true}) {
        // Off the root, in is not needed at all.
        auto v = [&](std::int64_t i) { return 0.5f * static_cast<float>(i) + static_cast<float>(root); };
        const Tensor in = me == root ? make(DType::f32, n * chunk, v) : Tensor();
        Tensor out = Tensor::zeros({chunk});
        Counted counted(w, CommOp::scatter);
        if (async) w.scatter_async(in, out, root)->wait();
        else w.scatter(in, out, root);
        counted.check(out.nbytes() * n, root);
        check_values(out, [&](std::int64_t j) { return 0.5 * static_cast<double>(me * chunk + j) + root; },
                     "scatter of chunk " + std::to_string(chunk) + " from " + std::to_string(root));
      }
    }
  }
}

TEST_CASE("reduce_scatter with every op, odd chunk sizes", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  for (std::int64_t chunk : {1, 3, 1001}) {
    for (ReduceOp op : kOps) {
      for (bool async : {false, true}) {
        const Tensor in = make(DType::f32, n * chunk, [&](std::int64_t i) { return contribution(me, i); });
        Tensor out = Tensor::zeros({chunk});
        Counted counted(w, CommOp::reduce_scatter);
        if (async) w.reduce_scatter_async(in, out, op)->wait();
        else w.reduce_scatter(in, out, op);
        counted.check(in.nbytes());
        check_values(out, [&](std::int64_t j) { return reduced_f32(op, n, me * chunk + j); },
                     std::string("reduce_scatter ") + op_name(op) + " chunk " + std::to_string(chunk));
      }
    }
  }
  for (DType dtype : {DType::i32, DType::bf16}) {
    const std::int64_t chunk = 7;
    const Tensor in = make(dtype, n * chunk, [&](std::int64_t i) { return contribution(me, i); });
    Tensor out = Tensor::zeros({chunk}, dtype);
    w.reduce_scatter(in, out, ReduceOp::sum);
    check_values(out, [&](std::int64_t j) { return reduced(ReduceOp::sum, n, me * chunk + j); },
                 std::string("reduce_scatter of ") + dtype_name(dtype));
  }
}

TEST_CASE("all_to_all exchanges chunk j with rank j", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  // Element k of the chunk rank src sends to rank dst.
  auto value = [](int src, int dst, std::int64_t k) {
    return static_cast<float>(src * 100000 + dst * 1000 + k % 1000);
  };
  for (std::int64_t chunk : {1, 4, 333}) {
    for (DType dtype : {DType::f32, DType::i32}) {
      for (bool async : {false, true}) {
        const Tensor in =
            make(dtype, n * chunk, [&](std::int64_t i) { return value(me, static_cast<int>(i / chunk), i % chunk); });
        Tensor out = Tensor::zeros({n * chunk}, dtype);
        Counted counted(w, CommOp::all_to_all);
        if (async) w.all_to_all_async(in, out)->wait();
        else w.all_to_all(in, out);
        counted.check(in.nbytes());
        check_values(out, [&](std::int64_t i) { return value(static_cast<int>(i / chunk), me, i % chunk); },
                     std::string("all_to_all ") + dtype_name(dtype) + " chunk " + std::to_string(chunk));
      }
    }
  }
}

TEST_CASE("all_to_allv with uneven and zero counts", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  // How many elements rank src sends to rank dst: 0, 1 or 2, uneven across pairs. The second
  // rule sends nothing at all.
  const std::vector<std::function<std::int64_t(int, int)>> rules = {
      [](int src, int dst) { return static_cast<std::int64_t>((src + 2 * dst) % 3); },
      [](int src, int dst) { return static_cast<std::int64_t>(src == dst ? 3 : (src * dst) % 4); },
      [](int, int) { return std::int64_t{0}; },
  };
  auto value = [](int src, int dst, std::int64_t k) { return static_cast<float>(src * 1000 + dst * 10 + k); };
  for (std::size_t rule = 0; rule < rules.size(); ++rule) {
    for (bool async : {false, true}) {
      std::vector<std::int64_t> send_counts(n), recv_counts(n);
      std::vector<float> in_values, out_expected;
      std::uint64_t to_others = 0;
      for (int j = 0; j < n; ++j) {
        send_counts[j] = rules[rule](me, j);
        recv_counts[j] = rules[rule](j, me);
        for (std::int64_t k = 0; k < send_counts[j]; ++k) in_values.push_back(value(me, j, k));
        for (std::int64_t k = 0; k < recv_counts[j]; ++k) out_expected.push_back(value(j, me, k));
        if (j != me) to_others += static_cast<std::uint64_t>(send_counts[j]) * sizeof(float);
      }
      const Tensor in = Tensor::from_floats(in_values, {static_cast<std::int64_t>(in_values.size())});
      Tensor out = Tensor::zeros({static_cast<std::int64_t>(out_expected.size())});
      Counted counted(w, CommOp::all_to_allv);
      if (async) w.all_to_allv_async(in, send_counts, out, recv_counts)->wait();
      else w.all_to_allv(in, send_counts, out, recv_counts);
      counted.check_exact(in.nbytes(), to_others);
      check_values(out, [&](std::int64_t i) { return static_cast<double>(out_expected[static_cast<std::size_t>(i)]); },
                   "all_to_allv by rule " + std::to_string(rule));
    }
  }
}

TEST_CASE("barrier, sync and async, counts a call and no bytes", "[core][comm][mpi]") {
  Communicator& w = world();
  for (bool async : {false, true}) {
    Counted counted(w, CommOp::barrier);
    if (async) w.barrier_async()->wait();
    else w.barrier();
    counted.check(0);
  }
}

TEST_CASE("send and recv: a ring shift with sendrecv, and pairs with async ops", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  auto value = [](int src, std::int64_t i) { return static_cast<float>(src * 100 + i % 100); };
  for (std::int64_t numel : {1, 100003}) {
    const Tensor mine = make(DType::f32, numel, [&](std::int64_t i) { return value(me, i); });
    Tensor got = Tensor::zeros({numel});
    Counted sends(w, CommOp::send), recvs(w, CommOp::recv);
    w.sendrecv(mine, next, got, prev, 3);
    sends.check(mine.nbytes());
    recvs.check(got.nbytes());
    check_values(got, [&](std::int64_t i) { return value(prev, i); }, "ring shift of " + std::to_string(numel));
  }

  // Pairs (0,1), (2,3), ...: both directions at once, two tags, a bf16 payload; the receives are
  // posted after the sends on one side and before them on the other.
  const int partner = me % 2 == 0 ? me + 1 : me - 1;
  if (partner < n) {
    const Tensor a = make(DType::f32, 10, [&](std::int64_t i) { return value(me, i); });
    const Tensor b = make(DType::bf16, 6, [&](std::int64_t i) { return static_cast<float>(me * 8 + i); });
    Tensor ra = Tensor::zeros({10}), rb = Tensor::zeros({6}, DType::bf16);
    std::vector<WorkHandle> works;
    if (me % 2 == 0) {
      works.push_back(w.send_async(a, partner, 1));
      works.push_back(w.send_async(b, partner, 2));
      works.push_back(w.recv_async(rb, partner, 2));
      works.push_back(w.recv_async(ra, partner, 1));
    } else {
      works.push_back(w.recv_async(rb, partner, 2));
      works.push_back(w.recv_async(ra, partner, 1));
      works.push_back(w.send_async(b, partner, 2));
      works.push_back(w.send_async(a, partner, 1));
    }
    for (auto& h : works) h->wait();
    check_values(ra, [&](std::int64_t i) { return value(partner, i); }, "pair exchange f32");
    check_values(rb, [&](std::int64_t i) { return static_cast<double>(partner * 8 + i); }, "pair exchange bf16");
  }

  // A message to oneself.
  const Tensor self_msg = make(DType::i32, 4, [&](std::int64_t i) { return static_cast<float>(me + i); });
  Tensor self_got = Tensor::zeros({4}, DType::i32);
  WorkHandle s = w.send_async(self_msg, me, 9);
  WorkHandle r = w.recv_async(self_got, me, 9);
  r->wait();
  s->wait();
  check_values(self_got, [&](std::int64_t i) { return static_cast<double>(me + i); }, "send to oneself");
}

TEST_CASE("several async ops in flight, waited in reverse order", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  Tensor a = make(DType::f32, 5003, [&](std::int64_t i) { return contribution(me, i); });
  Tensor b = make(DType::f32, 17, [&](std::int64_t i) { return me == 0 ? static_cast<float>(i) : -1.0f; });
  const Tensor c_in = make(DType::f32, 3, [&](std::int64_t j) { return static_cast<float>(me * 3 + j); });
  Tensor c_out = Tensor::zeros({n * 3});
  const Tensor d_in = make(DType::f32, n * 2, [&](std::int64_t i) { return contribution(me, i); });
  Tensor d_out = Tensor::zeros({2});
  const Tensor e_send = make(DType::f32, 1001, [&](std::int64_t i) { return static_cast<float>(me + i); });
  Tensor e_recv = Tensor::zeros({1001});
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  std::vector<WorkHandle> works;
  works.push_back(w.all_reduce_async(a, ReduceOp::sum));
  works.push_back(w.recv_async(e_recv, prev, 5));
  works.push_back(w.broadcast_async(b, 0));
  works.push_back(w.all_gather_async(c_in, c_out));
  works.push_back(w.send_async(e_send, next, 5));
  works.push_back(w.reduce_scatter_async(d_in, d_out, ReduceOp::max));
  works.push_back(w.barrier_async());
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  for (auto& h : works) CHECK(h->test());

  check_values(a, [&](std::int64_t i) { return reduced(ReduceOp::sum, n, i); }, "in flight: all_reduce");
  check_values(b, [&](std::int64_t i) { return static_cast<double>(i); }, "in flight: broadcast");
  check_values(c_out, [&](std::int64_t i) { return static_cast<double>(i); }, "in flight: all_gather");
  check_values(d_out, [&](std::int64_t j) { return reduced(ReduceOp::max, n, me * 2 + j); },
               "in flight: reduce_scatter");
  check_values(e_recv, [&](std::int64_t i) { return static_cast<double>(prev + i); }, "in flight: ring message");
}

TEST_CASE("an async all_reduce completes while the caller only computes", "[core][comm][mpi]") {
  // Between issuing and the check, this thread never calls into MPI: test() only reads a flag
  // the progress thread sets. If the op completes, the progress thread carried it.
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  Tensor t = make(DType::f32, 400003, [&](std::int64_t i) { return contribution(me, i); });
  WorkHandle h = w.all_reduce_async(t, ReduceOp::sum);

  const auto start = std::chrono::steady_clock::now();
  double acc = 0;
  long rounds = 0;
  bool completed = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    for (int k = 0; k < 20000; ++k) acc += std::sqrt(static_cast<double>(k + rounds));  // the "compute"
    ++rounds;
    if (h->test()) {
      completed = true;
      break;
    }
  }
  CHECK(completed);
  CHECK(acc > 0);
  h->wait();
  check_values(t, [&](std::int64_t i) { return reduced(ReduceOp::sum, n, i); }, "overlapped all_reduce");
}

TEST_CASE("split into even and odd ranks, with a collective on each group", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[r] = r;
  CHECK(w.world_ranks() == all);

  const int parity = me % 2;
  std::vector<int> members;
  for (int r = parity; r < n; r += 2) members.push_back(r);

  std::unique_ptr<Communicator> group = w.split(parity, me);
  CHECK(group->size() == static_cast<int>(members.size()));
  CHECK(group->rank() == me / 2);
  CHECK(group->world_ranks() == members);
  CHECK(group->backend() == w.backend());
  CHECK(total_calls(*group) == 0);  // a fresh communicator counts its own ops

  Tensor t = Tensor::from_floats({static_cast<float>(me), 1.0f}, {2});
  Counted counted(*group, CommOp::all_reduce);
  group->all_reduce(t, ReduceOp::sum);
  counted.check(t.nbytes());
  double sum = 0;
  for (int r : members) sum += r;
  check_values(t, [&](std::int64_t i) { return i == 0 ? sum : static_cast<double>(members.size()); },
               "all_reduce in the group");

  // Groups run independently: a broadcast from each group's last member.
  Tensor b = Tensor::from_floats({group->rank() == group->size() - 1 ? static_cast<float>(me) : -1.0f}, {1});
  group->broadcast_async(b, group->size() - 1)->wait();
  check_values(b, [&](std::int64_t) { return static_cast<double>(members.back()); }, "broadcast in the group");

  // A key reverses the order; a group of one still works.
  std::unique_ptr<Communicator> reversed = w.split(0, n - me);
  CHECK(reversed->rank() == n - 1 - me);
  std::vector<int> backwards(all.rbegin(), all.rend());
  CHECK(reversed->world_ranks() == backwards);
  std::unique_ptr<Communicator> alone = w.split(me, 0);
  CHECK(alone->size() == 1);
  CHECK(alone->world_ranks() == std::vector<int>{me});
  Tensor x = Tensor::from_floats({3.0f}, {1});
  alone->all_reduce(x, ReduceOp::sum);
  check_values(x, [](std::int64_t) { return 3.0; }, "all_reduce alone");

  // Ops on the world and on the group in flight at once: each communicator has its own thread,
  // so neither waits for the other.
  Tensor on_world = Tensor::from_floats({1.0f}, {1});
  Tensor on_group = Tensor::from_floats({2.0f}, {1});
  WorkHandle hg = group->all_reduce_async(on_group, ReduceOp::sum);
  WorkHandle hw = w.all_reduce_async(on_world, ReduceOp::sum);
  hw->wait();
  hg->wait();
  check_values(on_world, [&](std::int64_t) { return static_cast<double>(n); }, "world all_reduce beside the group's");
  check_values(on_group, [&](std::int64_t) { return 2.0 * static_cast<double>(members.size()); },
               "group all_reduce beside the world's");
  group->barrier();
  w.barrier();
}

TEST_CASE("a pending receive: test() is false until the message is sent", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  // Pairs (0,1), (2,3), ...: the even rank sends only after a barrier that the odd rank enters
  // with its receive already posted, so the receive cannot have completed before it. A world of
  // one sends to itself.
  const bool alone = n == 1;
  const bool receiver = alone || (me % 2 == 1);
  const bool sender = alone || (me % 2 == 0 && me + 1 < n);
  const int from = alone ? 0 : me - 1, to = alone ? 0 : me + 1;
  Tensor buf = Tensor::zeros({3});
  WorkHandle r;
  if (receiver) {
    r = w.recv_async(buf, from, 11);
    CHECK_FALSE(r->test());
  }
  w.barrier();  // a collective queued behind a pending receive still runs
  if (sender) w.send(Tensor::from_floats({1.0f, 2.0f, 3.0f}, {3}), to, 11);
  if (receiver) {
    r->wait();
    CHECK(r->test());
    check_values(buf, [](std::int64_t i) { return static_cast<double>(i + 1); }, "the received message");
  }
}

#if defined(USP_HAVE_MPI)
TEST_CASE("tensors beyond one MPI call's count go in several calls", "[core][comm][mpi]") {
  // The limit is INT_MAX elements; lowered here so that ordinary sizes take the same path.
  struct Limit {
    Limit() { set_mpi_max_count_for_testing(1000); }
    ~Limit() { set_mpi_max_count_for_testing(INT_MAX); }
  } limit;
  Communicator& w = world();
  const int n = w.size(), me = w.rank();

  Tensor t = make(DType::f32, 10007, [&](std::int64_t i) { return contribution(me, i); });
  Counted counted(w, CommOp::all_reduce);
  w.all_reduce(t, ReduceOp::avg);
  counted.check(t.nbytes());  // one op, however many calls
  check_values(t, [&](std::int64_t i) { return reduced_f32(ReduceOp::avg, n, i); }, "all_reduce in pieces");

  Tensor b = make(DType::bf16, 2500, [&](std::int64_t i) { return me == n - 1 ? static_cast<float>(i % 200) : 0.0f; });
  w.broadcast(b, n - 1);
  check_values(b, [](std::int64_t i) { return static_cast<double>(i % 200); }, "broadcast in pieces");

  Tensor r = make(DType::i32, 3001, [&](std::int64_t i) { return contribution(me, i); });
  w.reduce(r, 0, ReduceOp::max);
  if (me == 0)
    check_values(r, [&](std::int64_t i) { return reduced(ReduceOp::max, n, i); },
                 "reduce in pieces");

  const Tensor msg = make(DType::f32, 2500, [&](std::int64_t i) { return static_cast<float>(me * 10000 + i); });
  Tensor got = Tensor::zeros({2500});
  w.sendrecv(msg, (me + 1) % n, got, (me + n - 1) % n, 4);
  check_values(got, [&](std::int64_t i) { return static_cast<double>(((me + n - 1) % n) * 10000 + i); },
               "sendrecv in pieces");

  // Ops that cannot be split refuse, on every rank, before communicating.
  const Tensor in = Tensor::zeros({1001});
  Tensor out = Tensor::zeros({1001 * n});
  CHECK_THROWS_AS(w.all_gather(in, out), Error);
  w.barrier();
}
#endif

TEST_CASE("bad arguments throw on every rank before anything is communicated", "[core][comm][mpi]") {
  Communicator& w = world();
  const int n = w.size(), me = w.rank();
  const std::uint64_t calls_before = total_calls(w);

  Tensor t = Tensor::zeros({6});
  Tensor undefined;
  Tensor wrong_out = Tensor::zeros({6 * n + 1});
  CHECK_THROWS_AS(w.all_gather(t, wrong_out), Error);
  Tensor bf16_out = Tensor::zeros({6 * n}, DType::bf16);
  CHECK_THROWS_AS(w.all_gather(t, bf16_out), Error);
  CHECK_THROWS_AS(w.all_reduce(undefined), Error);
  CHECK_THROWS_AS(w.broadcast(t, n), Error);
  CHECK_THROWS_AS(w.broadcast_async(t, -1), Error);
  CHECK_THROWS_AS(w.reduce(t, n + 2, ReduceOp::sum), Error);
  Tensor gathered = Tensor::zeros({6 * n});
  CHECK_THROWS_AS(w.gather(t, gathered, n), Error);
  CHECK_THROWS_AS(w.scatter(gathered, t, -1), Error);
  Tensor small = Tensor::zeros({5});
  CHECK_THROWS_AS(w.reduce_scatter(gathered, small), Error);
  Tensor longer = Tensor::zeros({6 * n + n});
  CHECK_THROWS_AS(w.all_to_all(gathered, longer), Error);
  std::vector<std::int64_t> too_few(n > 1 ? n - 1 : 2, 0), counts(n, 0);
  counts[0] = 6;
  CHECK_THROWS_AS(w.all_to_allv(t, too_few, t, counts), Error);
  std::vector<std::int64_t> wrong_sum(n, 1);  // sums to n, but t has 6 elements
  if (n == 6) wrong_sum[0] = 2;
  CHECK_THROWS_AS(w.all_to_allv(t, wrong_sum, t, counts), Error);
  if (n > 1) {  // what a rank sends itself must be what it receives from itself
    std::vector<std::int64_t> to_self(n, 0), from_self(n, 0);
    to_self[me] = 6;
    from_self[me] = 5;
    from_self[(me + 1) % n] = 1;
    CHECK_THROWS_WITH(w.all_to_allv(t, to_self, t, from_self), "all_to_allv: this rank sends itself 6 elements but expects 5");
  }
  CHECK_THROWS_AS(w.send(t, n, 0), Error);
  CHECK_THROWS_AS(w.recv(t, -1, 0), Error);
  CHECK_THROWS_AS(w.send(t, me, -3), Error);
  CHECK_THROWS_AS(w.split(-1, 0), Error);
  CHECK(total_calls(w) == calls_before);  // nothing was issued

  // The communicator is still in step on every rank.
  Tensor one = Tensor::from_floats({1.0f}, {1});
  w.all_reduce(one);
  check_values(one, [&](std::int64_t) { return static_cast<double>(n); }, "all_reduce after the errors");
}

TEST_CASE("a receive of the wrong size fails at wait()", "[core][comm][mpi]") {
  Communicator& w = world();
  const int me = w.rank(), n = w.size();
  // Pairs (0,1), (2,3), ...; an odd rank out (and a world of one) talks to itself.
  int partner = me % 2 == 0 ? me + 1 : me - 1;
  if (partner >= n) partner = me;
  const bool sender = partner == me || me % 2 == 0;
  const bool receiver = partner == me || me % 2 == 1;
  for (std::int64_t recv_numel : {6, 4}) {  // longer than the message, then shorter
    const Tensor msg = Tensor::zeros({5});
    Tensor buf = Tensor::zeros({recv_numel});
    WorkHandle s;
    if (sender) s = w.send_async(msg, partner, 7);
    if (receiver) CHECK_THROWS_AS(w.recv_async(buf, partner, 7)->wait(), Error);
    if (s) s->wait();
  }
  w.barrier();
}
