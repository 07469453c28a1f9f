// The byte accounting that the playbook's volume formulas are checked against.
#include <catch2/catch.hpp>

#include "common/comm/comm_volume.hpp"

using namespace usp;

TEST_CASE("ring volumes per rank", "[core][comm]") {
  const std::uint64_t B = 1200;
  for (int n : {1, 2, 3, 4, 5}) {
    std::uint64_t bcast_total = 0, reduce_total = 0;
    for (int r = 0; r < n; ++r) {
      CHECK(comm_volume(CommOp::all_reduce, B, n, r).bytes_sent == 2 * (n - 1) * B / n);
      CHECK(comm_volume(CommOp::all_gather, B, n, r).bytes_sent == (n - 1) * B / n);
      CHECK(comm_volume(CommOp::reduce_scatter, B, n, r).bytes_sent == (n - 1) * B / n);
      CHECK(comm_volume(CommOp::all_to_all, B, n, r).bytes_sent == (n - 1) * B / n);
      bcast_total += comm_volume(CommOp::broadcast, B, n, r, n - 1).bytes_sent;
      reduce_total += comm_volume(CommOp::reduce, B, n, r, 0).bytes_sent;
      CHECK(comm_volume(CommOp::all_reduce, B, n, r).payload_bytes == B);
    }
    // A pipelined chain: n-1 links each carry the whole tensor.
    CHECK(bcast_total == (n - 1) * B);
    CHECK(reduce_total == (n - 1) * B);
  }
  // The DP identity behind "2Ψ": an all-reduce sends what a reduce-scatter plus an all-gather send.
  CHECK(comm_volume(CommOp::all_reduce, B, 4, 1).bytes_sent ==
        comm_volume(CommOp::reduce_scatter, B, 4, 1).bytes_sent + comm_volume(CommOp::all_gather, B, 4, 1).bytes_sent);
  CHECK(busbw_factor(CommOp::all_reduce, 4) == Approx(1.5));
  CHECK(busbw_factor(CommOp::all_gather, 4) == Approx(0.75));
  CHECK(busbw_factor(CommOp::broadcast, 4) == Approx(1.0));
}
