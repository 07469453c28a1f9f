#include "common/comm/comm_volume.hpp"

#include "common/error.hpp"

namespace usp {

CommVolume comm_volume(CommOp op, std::uint64_t bytes, int n, int rank, int root) {
  USP_CHECK(n >= 1 && rank >= 0 && rank < n, "comm_volume: bad rank/size");
  const std::uint64_t un = static_cast<std::uint64_t>(n);
  CommVolume v{bytes, 0};
  switch (op) {
    case CommOp::all_reduce: v.bytes_sent = 2 * (un - 1) * bytes / un; break;
    case CommOp::all_gather:
    case CommOp::reduce_scatter:
    case CommOp::all_to_all: v.bytes_sent = (un - 1) * bytes / un; break;
    case CommOp::broadcast: v.bytes_sent = (n > 1 && rank == (root + n - 1) % n) ? 0 : bytes; break;
    case CommOp::reduce: v.bytes_sent = rank == root ? 0 : bytes; break;
    case CommOp::gather: v.bytes_sent = rank == root ? 0 : bytes / un; break;
    case CommOp::scatter: v.bytes_sent = rank == root ? (un - 1) * bytes / un : 0; break;
    case CommOp::send: v.bytes_sent = bytes; break;
    case CommOp::recv:
    case CommOp::barrier:
    case CommOp::all_to_allv: v.bytes_sent = 0; break;  // all_to_allv: counted from its counts
  }
  if (n == 1) v.bytes_sent = 0;
  return v;
}

double busbw_factor(CommOp op, int n) {
  const double dn = n;
  switch (op) {
    case CommOp::all_reduce: return 2.0 * (dn - 1) / dn;
    case CommOp::all_gather:
    case CommOp::reduce_scatter:
    case CommOp::all_to_all:
    case CommOp::all_to_allv: return (dn - 1) / dn;
    default: return 1.0;
  }
}

}  // namespace usp
