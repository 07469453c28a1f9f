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
// Arguments are checked on the calling thread before anything is queued, so a mistake made on
// every rank throws on every rank and nobody is left inside MPI. One thread issues the ops of a
// communicator; several communicators may be used from several threads.
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

  WorkHandle broadcast_async(Tensor& t, int root) override;
  WorkHandle reduce_async(Tensor& t, int root, ReduceOp op) override;
  WorkHandle all_reduce_async(Tensor& t, ReduceOp op) override;
  WorkHandle gather_async(const Tensor& in, Tensor& out, int root) override;
  WorkHandle all_gather_async(const Tensor& in, Tensor& out) override;
  WorkHandle scatter_async(const Tensor& in, Tensor& out, int root) override;
  WorkHandle reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp op) override;
  WorkHandle all_to_all_async(const Tensor& in, Tensor& out) override;
  WorkHandle all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                               const std::vector<std::int64_t>& recv_counts) override;
  WorkHandle send_async(const Tensor& t, int dst, int tag) override;
  WorkHandle recv_async(Tensor& t, int src, int tag) override;
  WorkHandle barrier_async() override;

  std::unique_ptr<Communicator> split(int color, int key) override;

  MPI_Comm handle() const { return comm_; }

 private:
  void account(CommOp op, std::uint64_t payload_bytes, int root = 0);
  WorkHandle submit(CommOp op, mpi::ProgressThread::Task task);

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
