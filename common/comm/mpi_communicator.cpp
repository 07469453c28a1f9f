#include "common/comm/mpi_communicator.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "common/error.hpp"
#include "common/comm/backends.hpp"
#include "common/comm/mpi_call.hpp"
#include "common/comm/mpi_dtypes.hpp"

namespace usp {
namespace {

char* bytes_of(const Tensor& t) { return static_cast<char*>(t.raw()); }

// Whether two tensors' memory ranges intersect (MPI forbids aliased send and receive buffers).
bool overlaps(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.nbytes() == 0 || b.nbytes() == 0) return false;
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.raw());
  const auto b0 = reinterpret_cast<std::uintptr_t>(b.raw());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// Ops whose buffers MPI addresses with int counts and displacements as a whole: refuse what
// does not fit, before communicating (a silent overflow would corrupt or hang).
void check_fits(const char* op, std::int64_t elements) {
  const std::int64_t limit = mpi::max_count();
  if (elements > limit)
    throw Error(std::string(op) + ": " + std::to_string(elements) + " elements exceed the " +
                std::to_string(limit) + " one MPI call can address; split it into several smaller ops");
}

// Calls f(buffer, count) over t's elements in pieces of at most step elements. Point-to-point
// needs at least one message even for an empty tensor, so that a size mismatch with the peer is
// caught rather than left unmatched.
template <class F>
void for_each_piece(const Tensor& t, std::int64_t step, bool at_least_one, F&& f) {
  const std::int64_t n = t.numel();
  const auto es = static_cast<std::int64_t>(dtype_size(t.dtype()));
  char* base = bytes_of(t);
  if (n == 0 && at_least_one) f(static_cast<void*>(base), 0);
  for (std::int64_t offset = 0; offset < n; offset += step)
    f(static_cast<void*>(base + offset * es), static_cast<int>(std::min(step, n - offset)));
}

// Whether `part` already is rank `me`'s slot of `whole` (a view of it: MPI_IN_PLACE).
bool is_slot(const Tensor& part, const Tensor& whole, int me) {
  return bytes_of(part) == bytes_of(whole) + static_cast<std::size_t>(me) * part.nbytes();
}

// Where MPI sends in from: in itself, or a copy of it (held in `staged`) where it overlaps out.
const void* send_buffer(const Tensor& in, const Tensor& out, Tensor& staged) {
  if (!overlaps(in, out)) return in.raw();
  staged = in.clone(MemCategory::CommBuffer);
  return staged.raw();
}

// A point-to-point transfer of t with `peer`: posted piece by piece, then completed by the
// progress thread's polling. Pieces of one tensor go with the same tag; MPI delivers messages
// between two ranks with one tag in the order they were sent, so the receiver's pieces line up.
// A received message of another size is an error, not a partial fill: its count is checked.
mpi::ProgressThread::Task p2p_task(CommOp op, const Tensor& t, int peer, int tag, MPI_Comm comm) {
  const MPI_Datatype type = mpi::element_type(t.dtype());
  const std::int64_t step = mpi::max_count();
  const bool sending = op == CommOp::send;
  return [=](mpi::ProgressThread& p) {
    for_each_piece(t, step, true, [&](void* buf, int n) {
      MPI_Request request;
      {
        mpi::Lock lock;
        if (sending)
          mpi::check(MPI_Isend(buf, n, type, peer, tag, comm, &request), "MPI_Isend");
        else
          mpi::check(MPI_Irecv(buf, n, type, peer, tag, comm, &request), "MPI_Irecv");
      }
      p.attach(request, type, sending ? -1 : n, comm_op_name(op), t.storage());
    });
  };
}

std::vector<int> to_ints(const std::vector<std::int64_t>& v) { return {v.begin(), v.end()}; }

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  std::exclusive_scan(counts.begin(), counts.end(), d.begin(), 0);
  return d;
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  {
    mpi::Lock lock;
    // Errors come back as codes (and then as usp::Error) instead of aborting inside MPI.
    mpi::check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi::check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    mpi::check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    MPI_Group group, world_group;
    mpi::check(MPI_Comm_group(comm_, &group), "MPI_Comm_group");
    mpi::check(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group");
    std::vector<int> ranks(static_cast<std::size_t>(size_));
    std::iota(ranks.begin(), ranks.end(), 0);
    world_ranks_.resize(ranks.size());
    mpi::check(MPI_Group_translate_ranks(group, size_, ranks.data(), world_group, world_ranks_.data()),
               "MPI_Group_translate_ranks");
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
  }
  progress_ = std::make_unique<mpi::ProgressThread>();
}

MpiCommunicator::~MpiCommunicator() {
  progress_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) {
    mpi::Lock lock;
    MPI_Comm_free(&comm_);
  }
}

watchdog::Subject MpiCommunicator::collective_subject(const std::string& op) const {
  watchdog::Subject s{op, label(), world_ranks_[static_cast<std::size_t>(rank_)], {}, true};
  for (int r = 0; r < size_; ++r)
    if (r != rank_) s.peers.push_back(world_ranks_[static_cast<std::size_t>(r)]);
  return s;
}

WorkHandle MpiCommunicator::submit(CommOp op, mpi::ProgressThread::Task task) {
  // Traced as a "comm" span named after the op; barriers move no data (and Tracer::align is
  // one), so they are not.
  return progress_->submit(collective_subject(comm_op_name(op)), std::move(task),
                           op == CommOp::barrier ? std::string() : std::string(comm_op_name(op)));
}

WorkHandle MpiCommunicator::submit_p2p(CommOp op, int peer, int tag, mpi::ProgressThread::Task task) {
  const int me = world_ranks_[static_cast<std::size_t>(rank_)];
  const int them = world_ranks_[static_cast<std::size_t>(peer)];
  return progress_->submit({std::string(comm_op_name(op)) + " (tag " + std::to_string(tag) + ")", label(), me, {them}, false},
                           std::move(task), comm_op_name(op));
}

// ---- rooted and all-rank reductions / broadcast: in place, in pieces --------------------------

WorkHandle MpiCommunicator::do_broadcast(Tensor& t, int root) {
  const MPI_Datatype type = mpi::element_type(t.dtype());
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  return submit(CommOp::broadcast, [t, root, type, step, comm](mpi::ProgressThread& p) {
    for_each_piece(t, step, false, [&](void* buf, int n) {
      p.collective("MPI_Bcast", [&](MPI_Request* r) {
        return r ? MPI_Ibcast(buf, n, type, root, comm, r) : MPI_Bcast(buf, n, type, root, comm);
      });
    });
  });
}

WorkHandle MpiCommunicator::do_reduce(Tensor& t, int root, ReduceOp op) {
  const mpi::Reduction red = mpi::reduction(t.dtype(), op);
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  const bool is_root = rank_ == root;
  const int n_ranks = size_;
  return submit(CommOp::reduce, [=](mpi::ProgressThread& p) {
    for_each_piece(t, step, false, [&](void* buf, int n) {
      // The root reduces into its own buffer; the others only contribute.
      const void* send = is_root ? MPI_IN_PLACE : buf;
      void* recv = is_root ? buf : nullptr;
      p.collective("MPI_Reduce", [&](MPI_Request* r) {
        return r ? MPI_Ireduce(send, recv, n, red.type, red.op, root, comm, r)
                 : MPI_Reduce(send, recv, n, red.type, red.op, root, comm);
      });
    });
    if (op == ReduceOp::avg && is_root) mpi::divide(t.dtype(), t.raw(), t.numel(), n_ranks);
  });
}

WorkHandle MpiCommunicator::do_all_reduce(Tensor& t, ReduceOp op) {
  const mpi::Reduction red = mpi::reduction(t.dtype(), op);
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  const int n_ranks = size_;
  return submit(CommOp::all_reduce, [=](mpi::ProgressThread& p) {
    for_each_piece(t, step, false, [&](void* buf, int n) {
      p.collective("MPI_Allreduce", [&](MPI_Request* r) {
        return r ? MPI_Iallreduce(MPI_IN_PLACE, buf, n, red.type, red.op, comm, r)
                 : MPI_Allreduce(MPI_IN_PLACE, buf, n, red.type, red.op, comm);
      });
    });
    if (op == ReduceOp::avg) mpi::divide(t.dtype(), t.raw(), t.numel(), n_ranks);
  });
}

// ---- gathers and scatters: one call, counts in elements ---------------------------------------

WorkHandle MpiCommunicator::do_gather(const Tensor& in, Tensor& out, int root) {
  const bool is_root = rank_ == root;
  check_fits("gather", in.numel() * size_);
  const MPI_Datatype type = mpi::element_type(in.dtype());
  const int n = static_cast<int>(in.numel());
  const MPI_Comm comm = comm_;
  const int me = rank_;
  return submit(CommOp::gather, [=](mpi::ProgressThread& p) {
    const void* send = in.raw();
    void* recv = nullptr;
    Tensor staged;
    if (is_root) {
      recv = out.raw();
      send = is_slot(in, out, me) ? MPI_IN_PLACE : send_buffer(in, out, staged);  // in: the root's slot of out
    }
    p.collective("MPI_Gather", [&](MPI_Request* r) {
      return r ? MPI_Igather(send, n, type, recv, n, type, root, comm, r)
               : MPI_Gather(send, n, type, recv, n, type, root, comm);
    });
  });
}

WorkHandle MpiCommunicator::do_all_gather(const Tensor& in, Tensor& out) {
  check_fits("all_gather", out.numel());
  const MPI_Datatype type = mpi::element_type(in.dtype());
  const int n = static_cast<int>(in.numel());
  const MPI_Comm comm = comm_;
  const int me = rank_;
  return submit(CommOp::all_gather, [=](mpi::ProgressThread& p) {
    Tensor staged;
    // in place: a shard that is a view of its slot in the flat buffer (ZeRO)
    const void* send = is_slot(in, out, me) ? MPI_IN_PLACE : send_buffer(in, out, staged);
    void* recv = out.raw();
    p.collective("MPI_Allgather", [&](MPI_Request* r) {
      return r ? MPI_Iallgather(send, n, type, recv, n, type, comm, r)
               : MPI_Allgather(send, n, type, recv, n, type, comm);
    });
  });
}

WorkHandle MpiCommunicator::do_scatter(const Tensor& in, Tensor& out, int root) {
  const bool is_root = rank_ == root;
  check_fits("scatter", out.numel() * size_);
  const MPI_Datatype type = mpi::element_type(out.dtype());
  const int n = static_cast<int>(out.numel());
  const MPI_Comm comm = comm_;
  const int me = rank_;
  return submit(CommOp::scatter, [=](mpi::ProgressThread& p) {
    const void* send = nullptr;
    void* recv = out.raw();
    Tensor staged;
    if (is_root) {
      send = in.raw();
      if (is_slot(out, in, me))
        recv = MPI_IN_PLACE;  // out already is the root's chunk of in
      else
        send = send_buffer(in, out, staged);
    }
    p.collective("MPI_Scatter", [&](MPI_Request* r) {
      return r ? MPI_Iscatter(send, n, type, recv, n, type, root, comm, r)
               : MPI_Scatter(send, n, type, recv, n, type, root, comm);
    });
  });
}

WorkHandle MpiCommunicator::do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  check_fits("reduce_scatter", in.numel());
  const mpi::Reduction red = mpi::reduction(in.dtype(), op);
  const int n = static_cast<int>(out.numel());
  const MPI_Comm comm = comm_;
  const int n_ranks = size_;
  return submit(CommOp::reduce_scatter, [=](mpi::ProgressThread& p) {
    Tensor staged;
    const void* send = send_buffer(in, out, staged);
    void* recv = out.raw();
    p.collective("MPI_Reduce_scatter_block", [&](MPI_Request* r) {
      return r ? MPI_Ireduce_scatter_block(send, recv, n, red.type, red.op, comm, r)
               : MPI_Reduce_scatter_block(send, recv, n, red.type, red.op, comm);
    });
    if (op == ReduceOp::avg) mpi::divide(out.dtype(), recv, out.numel(), n_ranks);
  });
}

WorkHandle MpiCommunicator::do_all_to_all(const Tensor& in, Tensor& out) {
  check_fits("all_to_all", in.numel());
  const MPI_Datatype type = mpi::element_type(in.dtype());
  const int n = static_cast<int>(in.numel() / size_);
  const MPI_Comm comm = comm_;
  return submit(CommOp::all_to_all, [=](mpi::ProgressThread& p) {
    Tensor staged;
    const void* send = send_buffer(in, out, staged);
    void* recv = out.raw();
    p.collective("MPI_Alltoall", [&](MPI_Request* r) {
      return r ? MPI_Ialltoall(send, n, type, recv, n, type, comm, r)
               : MPI_Alltoall(send, n, type, recv, n, type, comm);
    });
  });
}

WorkHandle MpiCommunicator::do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts,
                                           Tensor& out, const std::vector<std::int64_t>& recv_counts) {
  // Displacements are ints too: each side must fit as a whole. (Counts differ between ranks,
  // so unlike the other checks this one can fail on some ranks only.)
  check_fits("all_to_allv", std::max(in.numel(), out.numel()));
  const MPI_Datatype type = mpi::element_type(in.dtype());
  std::vector<int> scounts = to_ints(send_counts), rcounts = to_ints(recv_counts);
  std::vector<int> sdispls = displacements(scounts), rdispls = displacements(rcounts);
  const MPI_Comm comm = comm_;
  return submit(CommOp::all_to_allv, [=](mpi::ProgressThread& p) {
    Tensor staged;
    const void* send = send_buffer(in, out, staged);
    void* recv = out.raw();
    p.collective("MPI_Alltoallv", [&](MPI_Request* r) {
      return r ? MPI_Ialltoallv(send, scounts.data(), sdispls.data(), type, recv, rcounts.data(), rdispls.data(),
                                type, comm, r)
               : MPI_Alltoallv(send, scounts.data(), sdispls.data(), type, recv, rcounts.data(), rdispls.data(),
                               type, comm);
    });
  });
}

// ---- point-to-point: posted, then completed by the progress thread's polling -------------------

WorkHandle MpiCommunicator::do_send(const Tensor& t, int dst, int tag) {
  return submit_p2p(CommOp::send, dst, tag, p2p_task(CommOp::send, t, dst, tag, comm_));
}

WorkHandle MpiCommunicator::do_recv(Tensor& t, int src, int tag) {
  return submit_p2p(CommOp::recv, src, tag, p2p_task(CommOp::recv, t, src, tag, comm_));
}

WorkHandle MpiCommunicator::do_barrier() {
  const MPI_Comm comm = comm_;
  return submit(CommOp::barrier, [comm](mpi::ProgressThread& p) {
    p.collective("MPI_Barrier", [&](MPI_Request* r) { return r ? MPI_Ibarrier(comm, r) : MPI_Barrier(comm); });
  });
}

std::unique_ptr<Communicator> MpiCommunicator::do_split(int color, int key) {
  // Run on the progress thread, so the split takes its place among the ops issued before it.
  auto result = std::make_shared<std::unique_ptr<Communicator>>();
  const MPI_Comm comm = comm_;
  WorkHandle w = progress_->submit(collective_subject("split"),
                                   [=](mpi::ProgressThread&) {
                                     MPI_Comm part = MPI_COMM_NULL;
                                     {
                                       mpi::Lock lock;
                                       mpi::check(MPI_Comm_split(comm, color, key, &part), "MPI_Comm_split");
                                     }
                                     *result = std::make_unique<MpiCommunicator>(part);
                                   });
  w->wait();
  return std::move(*result);
}

// ---- constructors -----------------------------------------------------------------------------

std::unique_ptr<Communicator> make_mpi_world() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw Error("make_mpi_world: MPI is not initialised (usp::Runtime initialises it)");
  MPI_Comm comm = MPI_COMM_NULL;
  {
    mpi::Lock lock;
    // A duplicate, so that the course's traffic never matches messages of other code on
    // MPI_COMM_WORLD.
    mpi::check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  }
  return std::make_unique<MpiCommunicator>(comm);
}

void set_mpi_max_count_for_testing(std::int64_t n) { mpi::set_max_count(n); }

}  // namespace usp
