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

// Calls f(offset, count) over [0, n) in pieces of at most step elements. Point-to-point needs
// at least one message even for an empty tensor, so that a size mismatch with the peer is
// caught rather than left unmatched.
template <class F>
void for_each_piece(std::int64_t n, std::int64_t step, bool at_least_one, F&& f) {
  if (n == 0 && at_least_one) f(std::int64_t{0}, 0);
  for (std::int64_t offset = 0; offset < n; offset += step)
    f(offset, static_cast<int>(std::min(step, n - offset)));
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
    const std::size_t es = dtype_size(t.dtype());
    char* base = bytes_of(t);
    for_each_piece(t.numel(), step, false, [&](std::int64_t offset, int n) {
      void* buf = base + offset * static_cast<std::int64_t>(es);
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
    const std::size_t es = dtype_size(t.dtype());
    char* base = bytes_of(t);
    for_each_piece(t.numel(), step, false, [&](std::int64_t offset, int n) {
      void* buf = base + offset * static_cast<std::int64_t>(es);
      // The root reduces into its own buffer; the others only contribute.
      const void* send = is_root ? MPI_IN_PLACE : buf;
      void* recv = is_root ? buf : nullptr;
      p.collective("MPI_Reduce", [&](MPI_Request* r) {
        return r ? MPI_Ireduce(send, recv, n, red.type, red.op, root, comm, r)
                 : MPI_Reduce(send, recv, n, red.type, red.op, root, comm);
      });
    });
    if (op == ReduceOp::avg && is_root) mpi::divide(t.dtype(), base, t.numel(), n_ranks);
  });
}

WorkHandle MpiCommunicator::do_all_reduce(Tensor& t, ReduceOp op) {
  const mpi::Reduction red = mpi::reduction(t.dtype(), op);
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  const int n_ranks = size_;
  return submit(CommOp::all_reduce, [=](mpi::ProgressThread& p) {
    const std::size_t es = dtype_size(t.dtype());
    char* base = bytes_of(t);
    for_each_piece(t.numel(), step, false, [&](std::int64_t offset, int n) {
      void* buf = base + offset * static_cast<std::int64_t>(es);
      p.collective("MPI_Allreduce", [&](MPI_Request* r) {
        return r ? MPI_Iallreduce(MPI_IN_PLACE, buf, n, red.type, red.op, comm, r)
                 : MPI_Allreduce(MPI_IN_PLACE, buf, n, red.type, red.op, comm);
      });
    });
    if (op == ReduceOp::avg) mpi::divide(t.dtype(), base, t.numel(), n_ranks);
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
      if (bytes_of(in) == bytes_of(out) + static_cast<std::size_t>(me) * in.nbytes()) {
        send = MPI_IN_PLACE;  // in already is the root's slot of out
      } else if (overlaps(in, out)) {
        staged = in.clone(MemCategory::CommBuffer);
        send = staged.raw();
      }
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
    const void* send = in.raw();
    Tensor staged;
    if (bytes_of(in) == bytes_of(out) + static_cast<std::size_t>(me) * in.nbytes()) {
      send = MPI_IN_PLACE;  // a shard that is a view of its slot in the flat buffer (ZeRO)
    } else if (overlaps(in, out)) {
      staged = in.clone(MemCategory::CommBuffer);
      send = staged.raw();
    }
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
      if (bytes_of(out) == bytes_of(in) + static_cast<std::size_t>(me) * out.nbytes()) {
        recv = MPI_IN_PLACE;  // out already is the root's chunk of in
      } else if (overlaps(in, out)) {
        staged = in.clone(MemCategory::CommBuffer);
        send = staged.raw();
      }
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
    const void* send = in.raw();
    Tensor staged;
    if (overlaps(in, out)) {
      staged = in.clone(MemCategory::CommBuffer);
      send = staged.raw();
    }
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
    const void* send = in.raw();
    Tensor staged;
    if (overlaps(in, out)) {
      staged = in.clone(MemCategory::CommBuffer);
      send = staged.raw();
    }
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
    const void* send = in.raw();
    Tensor staged;
    if (overlaps(in, out)) {
      staged = in.clone(MemCategory::CommBuffer);
      send = staged.raw();
    }
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
  const MPI_Datatype type = mpi::element_type(t.dtype());
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  return submit_p2p(CommOp::send, dst, tag, [=](mpi::ProgressThread& p) {
    const std::size_t es = dtype_size(t.dtype());
    char* base = bytes_of(t);
    // Pieces of one tensor go with the same tag; MPI delivers messages between two ranks with
    // one tag in the order they were sent, so the receiver's pieces line up.
    for_each_piece(t.numel(), step, true, [&](std::int64_t offset, int n) {
      MPI_Request request;
      {
        mpi::Lock lock;
        mpi::check(MPI_Isend(base + offset * static_cast<std::int64_t>(es), n, type, dst, tag, comm, &request),
                   "MPI_Isend");
      }
      p.attach(request, type, -1, "send", t.storage());
    });
  });
}

WorkHandle MpiCommunicator::do_recv(Tensor& t, int src, int tag) {
  const MPI_Datatype type = mpi::element_type(t.dtype());
  const std::int64_t step = mpi::max_count();
  const MPI_Comm comm = comm_;
  return submit_p2p(CommOp::recv, src, tag, [=](mpi::ProgressThread& p) {
    const std::size_t es = dtype_size(t.dtype());
    char* base = bytes_of(t);
    for_each_piece(t.numel(), step, true, [&](std::int64_t offset, int n) {
      MPI_Request request;
      {
        mpi::Lock lock;
        mpi::check(MPI_Irecv(base + offset * static_cast<std::int64_t>(es), n, type, src, tag, comm, &request),
                   "MPI_Irecv");
      }
      // A message of another size is an error, not a partial fill: the count is checked.
      p.attach(request, type, n, "recv", t.storage());
    });
  });
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
