// The MPI backend for CPU tensors: one MPI communicator (a duplicate of MPI_COMM_WORLD, or the
// result of a split), and one progress thread that runs its ops (mpi_progress.hpp).
//
// How the ops map onto MPI:
//   broadcast, reduce, all_reduce      MPI_Bcast, MPI_Reduce, MPI_Allreduce, in place; split into
//                                      several calls when the tensor exceeds MPI's int count
//   gather, all_gather, scatter        MPI_Gather, MPI_Allgather, MPI_Scatter (MPI_IN_PLACE when
//                                      the input is this rank's slot of the output, as for a ZeRO
//                                      shard viewing its flat buffer)
//   reduce_scatter                     MPI_Reduce_scatter_block
//   all_to_all, all_to_allv            MPI_Alltoall, MPI_Alltoallv
//   send, recv                         MPI_Isend, MPI_Irecv, completed by the progress thread
//   barrier                            MPI_Barrier
//   split                              MPI_Comm_split, on the progress thread (ordered with the
//                                      ops before it); the new communicator gets its own thread
// avg is sum followed by a division by size(). Inputs that overlap their outputs in any other
// way are copied aside first (a CommBuffer tensor), since MPI forbids aliased buffers.
//
// Communicator's public ops have checked the arguments before a do_* is called; the do_* add
// MPI's own limit (int counts, check_fits) on the calling thread, before anything is queued. One
// thread issues the ops of a communicator; several communicators may be used from several
// threads.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/comm/mpi_progress.hpp"

namespace usp {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of comm (MPI_Comm_free in the destructor, unless MPI is finalised already).
  explicit MpiCommunicator(MPI_Comm comm);
  // Finishes every op issued (other ranks take part in them), joins the thread, frees the comm.
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  Device device() const override { return Device::cpu(); }
  std::vector<int> world_ranks() const override { return world_ranks_; }

  MPI_Comm handle() const { return comm_; }

 private:
  WorkHandle do_broadcast(Tensor& t, int root) override;
  WorkHandle do_reduce(Tensor& t, int root, ReduceOp op) override;
  WorkHandle do_all_reduce(Tensor& t, ReduceOp op) override;
  WorkHandle do_gather(const Tensor& in, Tensor& out, int root) override;
  WorkHandle do_all_gather(const Tensor& in, Tensor& out) override;
  WorkHandle do_scatter(const Tensor& in, Tensor& out, int root) override;
  WorkHandle do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  WorkHandle do_all_to_all(const Tensor& in, Tensor& out) override;
  WorkHandle do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                            const std::vector<std::int64_t>& recv_counts) override;
  WorkHandle do_send(const Tensor& t, int dst, int tag) override;
  WorkHandle do_recv(Tensor& t, int src, int tag) override;
  WorkHandle do_barrier() override;
  std::unique_ptr<Communicator> do_split(int color, int key) override;

  // What the watchdog names for an op waiting on the whole group, or on one peer.
  watchdog::Subject collective_subject(const std::string& op) const;
  WorkHandle submit(CommOp op, mpi::ProgressThread::Task task);
  WorkHandle submit_p2p(CommOp op, int peer, int tag, mpi::ProgressThread::Task task);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::unique_ptr<mpi::ProgressThread> progress_;
};

// The largest element count one MPI call of this backend is given (INT_MAX by default). Tests
// lower it to check that big tensors are split into several calls; see mpi_call.hpp.
void set_mpi_max_count_for_testing(std::int64_t n);

}  // namespace usp
