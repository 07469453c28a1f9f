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

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;    // "mpi", "nccl", "mpi-host-staged", "self"
  virtual Device device() const = 0;          // where this backend's tensors live
  // Ranks of this group as ranks of the world communicator, in group order.
  virtual std::vector<int> world_ranks() const = 0;

  // ---- async forms (in place where one tensor is given) -------------------------------------
  virtual WorkHandle broadcast_async(Tensor& t, int root) = 0;
  virtual WorkHandle reduce_async(Tensor& t, int root, ReduceOp op = ReduceOp::sum) = 0;  // result on root
  virtual WorkHandle all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum) = 0;
  // out.numel() == size() * in.numel() (out only needed on root for gather); rank r's in goes
  // to out[r*n, (r+1)*n).
  virtual WorkHandle gather_async(const Tensor& in, Tensor& out, int root) = 0;
  virtual WorkHandle all_gather_async(const Tensor& in, Tensor& out) = 0;
  // in.numel() == size() * out.numel(); rank r receives chunk r.
  virtual WorkHandle scatter_async(const Tensor& in, Tensor& out, int root) = 0;
  virtual WorkHandle reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::sum) = 0;
  // in and out hold size() equal chunks; chunk j of in goes to rank j, chunk i of out comes from rank i.
  virtual WorkHandle all_to_all_async(const Tensor& in, Tensor& out) = 0;
  // Counts in elements, one per rank; chunks are packed in rank order in in and out.
  virtual WorkHandle all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts,
                                       Tensor& out, const std::vector<std::int64_t>& recv_counts) = 0;
  virtual WorkHandle send_async(const Tensor& t, int dst, int tag = 0) = 0;
  virtual WorkHandle recv_async(Tensor& t, int src, int tag = 0) = 0;
  virtual WorkHandle barrier_async() = 0;

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

  // A new communicator over the ranks of this one that pass the same color, ordered by key
  // (then by rank). Collective: every rank of this communicator must call it.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  // Backends call this once per op they issue.
  void count(CommOp op, std::uint64_t payload_bytes, std::uint64_t bytes_sent);
  // Shape/dtype/device checks shared by the backends; throw usp::Error with the op's name.
  void check_tensor(const char* op, const Tensor& t) const;
  void check_root(const char* op, int root) const;
  void check_peer(const char* op, int peer) const;

 private:
  CommStats stats_;
};

// Which backend to build for a device: "auto" picks MPI for CPU; NCCL for CUDA when it is
// compiled in and each rank has its own GPU, else MPI with host staging.
enum class CommBackend : unsigned char { automatic, mpi, nccl, host_staged };
CommBackend parse_comm_backend(const std::string& s);  // "auto", "mpi", "nccl", "host-staged"

}  // namespace usp
