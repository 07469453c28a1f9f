// Communicator: a group of ranks and the collectives between them.
//
// Every op has an async form returning a Work handle and a sync form (async + wait). Ops on
// one communicator run in the order they were issued, on every rank in the same order (as in
// MPI and NCCL). Async ops really overlap with compute: the MPI backend runs them on a
// progress thread, the NCCL backend on a communication stream.
//
// Buffers: tensors must live on the device the backend handles (CPU for MPI, CUDA for NCCL and
// the host-staged backend), and must stay alive and untouched until the Work is waited on.
//
// Byte counters: each op adds to stats() the bytes this rank sends under the bandwidth-optimal
// algorithm for that op (see comm_volume.hpp), so tests can assert the playbook's volumes
// (2Ψ for a DP all-reduce, 3Ψ for ZeRO-3). send/recv count what they really move.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor.hpp"

namespace usp {

enum class ReduceOp : unsigned char { sum, avg, max, min };

enum class CommOp : unsigned char {
  broadcast, reduce, all_reduce, gather, all_gather, scatter, reduce_scatter,
  all_to_all, all_to_allv, send, recv, barrier
};
inline constexpr int kNumCommOps = 12;
const char* comm_op_name(CommOp op);  // "all_reduce", ...

struct CommStats {
  std::array<std::uint64_t, kNumCommOps> calls{};         // ops issued
  std::array<std::uint64_t, kNumCommOps> payload_bytes{};  // the op's nominal size (see comm_volume.hpp)
  std::array<std::uint64_t, kNumCommOps> bytes_sent{};     // bytes this rank puts on the wire
  std::uint64_t sent(CommOp op) const { return bytes_sent[static_cast<int>(op)]; }
  std::uint64_t count(CommOp op) const { return calls[static_cast<int>(op)]; }
  std::uint64_t total_sent() const;
  // Adds another communicator's counts (a rank's traffic over several groups, as one).
  CommStats& operator+=(const CommStats& other);
};

// A pending op. wait() returns once the result is in place (for CUDA backends: ordered before
// later work on the compute stream), rethrowing any error of the op. test() polls.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
};
using WorkHandle = std::shared_ptr<Work>;

// The public ops are the interface's one door: each checks its arguments (the same words on
// every backend, on the calling thread, before anything is queued or sent, so a mistake made
// on every rank throws on every rank and no rank is left waiting), counts its bytes (see
// comm_volume.hpp), and hands the checked op to the backend's do_* operation. A backend
// implements only what is its own: how the op reaches the wire, and the limits of its library
// (MPI's int counts, NCCL's reducible types).
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;    // "mpi", "nccl", "mpi-host-staged", "self"
  virtual Device device() const = 0;          // where this backend's tensors live
  // Ranks of this group as ranks of the world communicator, in group order.
  virtual std::vector<int> world_ranks() const = 0;
  // How messages name this communicator: backend and world ranks, "mpi[0-3]", "nccl[0,2]".
  std::string label() const;

  // ---- async forms (in place where one tensor is given) -------------------------------------
  WorkHandle broadcast_async(Tensor& t, int root);
  WorkHandle reduce_async(Tensor& t, int root, ReduceOp op = ReduceOp::sum);  // result on root
  WorkHandle all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum);
  // out.numel() == size() * in.numel() (out only needed on root for gather); rank r's in goes
  // to out[r*n, (r+1)*n).
  WorkHandle gather_async(const Tensor& in, Tensor& out, int root);
  WorkHandle all_gather_async(const Tensor& in, Tensor& out);
  // in.numel() == size() * out.numel() (in only needed on root); rank r receives chunk r.
  WorkHandle scatter_async(const Tensor& in, Tensor& out, int root);
  WorkHandle reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::sum);
  // in and out hold size() equal chunks; chunk j of in goes to rank j, chunk i of out comes from rank i.
  WorkHandle all_to_all_async(const Tensor& in, Tensor& out);
  // Counts in elements, one per rank; chunks are packed in rank order in in and out.
  WorkHandle all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                               const std::vector<std::int64_t>& recv_counts);
  WorkHandle send_async(const Tensor& t, int dst, int tag = 0);
  WorkHandle recv_async(Tensor& t, int src, int tag = 0);
  WorkHandle barrier_async();

  // ---- sync forms -----------------------------------------------------------------------------
  void broadcast(Tensor& t, int root) { broadcast_async(t, root)->wait(); }
  void reduce(Tensor& t, int root, ReduceOp op = ReduceOp::sum) { reduce_async(t, root, op)->wait(); }
  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum) { all_reduce_async(t, op)->wait(); }
  void gather(const Tensor& in, Tensor& out, int root) { gather_async(in, out, root)->wait(); }
  void all_gather(const Tensor& in, Tensor& out) { all_gather_async(in, out)->wait(); }
  void scatter(const Tensor& in, Tensor& out, int root) { scatter_async(in, out, root)->wait(); }
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::sum) {
    reduce_scatter_async(in, out, op)->wait();
  }
  void all_to_all(const Tensor& in, Tensor& out) { all_to_all_async(in, out)->wait(); }
  void all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                   const std::vector<std::int64_t>& recv_counts) {
    all_to_allv_async(in, send_counts, out, recv_counts)->wait();
  }
  void send(const Tensor& t, int dst, int tag = 0) { send_async(t, dst, tag)->wait(); }
  void recv(Tensor& t, int src, int tag = 0) { recv_async(t, src, tag)->wait(); }
  // Sends to dst and receives from src at once (the step of a ring), without deadlock.
  void sendrecv(const Tensor& send, int dst, Tensor& recv, int src, int tag = 0);
  void barrier() { barrier_async()->wait(); }

  // A new communicator over the ranks of this one that pass the same color (>= 0), ordered by
  // key (then by rank). Collective: every rank of this communicator must call it.
  std::unique_ptr<Communicator> split(int color, int key);

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  // ---- what a backend implements: the op, its arguments already checked --------------------
  // Checked before these are called: tensors defined and on device(), root and peer ranks of
  // this communicator, tags >= 0, the size rules of collective_shapes.hpp. Where only the root
  // reads or writes a buffer (gather's out, scatter's in), it is only checked on the root and
  // may be undefined elsewhere.
  virtual WorkHandle do_broadcast(Tensor& t, int root) = 0;
  virtual WorkHandle do_reduce(Tensor& t, int root, ReduceOp op) = 0;
  virtual WorkHandle do_all_reduce(Tensor& t, ReduceOp op) = 0;
  virtual WorkHandle do_gather(const Tensor& in, Tensor& out, int root) = 0;
  virtual WorkHandle do_all_gather(const Tensor& in, Tensor& out) = 0;
  virtual WorkHandle do_scatter(const Tensor& in, Tensor& out, int root) = 0;
  virtual WorkHandle do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) = 0;
  virtual WorkHandle do_all_to_all(const Tensor& in, Tensor& out) = 0;
  virtual WorkHandle do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                                    const std::vector<std::int64_t>& recv_counts) = 0;
  virtual WorkHandle do_send(const Tensor& t, int dst, int tag) = 0;
  virtual WorkHandle do_recv(Tensor& t, int src, int tag) = 0;
  virtual WorkHandle do_barrier() = 0;
  virtual std::unique_ptr<Communicator> do_split(int color, int key) = 0;

  // Adds one issued op to stats(): its payload and the bytes this rank sends, by comm_volume
  // (count) or as measured (record: all_to_allv, whose volume depends on its counts).
  void count(CommOp op, std::uint64_t payload_bytes, int root = 0);
  void record(CommOp op, std::uint64_t payload_bytes, std::uint64_t bytes_sent);
  void check_tensor(const char* op, const Tensor& t) const;
  void check_root(const char* op, int root) const;
  void check_peer(const char* op, int peer) const;

  CommStats stats_;
};

// Which backend to build for a device: "auto" picks MPI for CPU; NCCL for CUDA when it is
// compiled in and each rank has its own GPU, else MPI with host staging.
enum class CommBackend : unsigned char { automatic, mpi, nccl, host_staged };
CommBackend parse_comm_backend(const std::string& s);  // "auto", "mpi", "nccl", "host-staged"

}  // namespace usp
