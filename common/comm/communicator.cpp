// The backend-independent parts of Communicator: op names, the public ops (argument checks and
// byte accounting around the backend's do_* operation) and the sendrecv ring step. The checks
// run on the issuing thread, before anything is queued or sent, so a bad argument fails on the
// rank that passed it without leaving a half-started op behind. An op is counted once the
// backend has accepted it (an op its library refuses is not counted).
#include "common/comm/communicator.hpp"

#include <exception>
#include <string>

#include "common/comm/collective_shapes.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/comm/watchdog.hpp"
#include "common/enum_names.hpp"
#include "common/error.hpp"

namespace usp {

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::broadcast: return "broadcast";
    case CommOp::reduce: return "reduce";
    case CommOp::all_reduce: return "all_reduce";
    case CommOp::gather: return "gather";
    case CommOp::all_gather: return "all_gather";
    case CommOp::scatter: return "scatter";
    case CommOp::reduce_scatter: return "reduce_scatter";
    case CommOp::all_to_all: return "all_to_all";
    case CommOp::all_to_allv: return "all_to_allv";
    case CommOp::send: return "send";
    case CommOp::recv: return "recv";
    case CommOp::barrier: return "barrier";
  }
  return "?";
}

CommStats& CommStats::operator+=(const CommStats& other) {
  for (int op = 0; op < kNumCommOps; ++op) {
    calls[op] += other.calls[op];
    payload_bytes[op] += other.payload_bytes[op];
    bytes_sent[op] += other.bytes_sent[op];
  }
  return *this;
}

std::uint64_t CommStats::total_sent() const {
  std::uint64_t total = 0;
  for (auto b : bytes_sent) total += b;
  return total;
}

void Communicator::sendrecv(const Tensor& send, int dst, Tensor& recv, int src, int tag) {
  // The receive is posted first so that a ring of ranks all sending at once always finds a
  // matching receive; both then progress together on the backend.
  WorkHandle r = recv_async(recv, src, tag);
  WorkHandle s = send_async(send, dst, tag);
  // Wait for both even if one fails, so no op is left referring to the caller's buffers.
  std::exception_ptr first_error;
  try {
    r->wait();
  } catch (...) {
    first_error = std::current_exception();
  }
  try {
    s->wait();
  } catch (...) {
    if (!first_error) first_error = std::current_exception();
  }
  if (first_error) std::rethrow_exception(first_error);
}

void Communicator::count(CommOp op, std::uint64_t payload_bytes, int root) {
  const CommVolume v = comm_volume(op, payload_bytes, size(), rank(), root);
  record(op, v.payload_bytes, v.bytes_sent);
}

void Communicator::record(CommOp op, std::uint64_t payload_bytes, std::uint64_t bytes_sent) {
  const int i = static_cast<int>(op);
  stats_.calls[i] += 1;
  stats_.payload_bytes[i] += payload_bytes;
  stats_.bytes_sent[i] += bytes_sent;
}

std::string Communicator::label() const { return backend() + "[" + watchdog::rank_list(world_ranks()) + "]"; }

// ---- the public ops: check, hand to the backend, count ----------------------------------------

WorkHandle Communicator::broadcast_async(Tensor& t, int root) {
  check_tensor("broadcast", t);
  check_root("broadcast", root);
  WorkHandle w = do_broadcast(t, root);
  count(CommOp::broadcast, t.nbytes(), root);
  return w;
}

WorkHandle Communicator::reduce_async(Tensor& t, int root, ReduceOp op) {
  check_tensor("reduce", t);
  check_root("reduce", root);
  WorkHandle w = do_reduce(t, root, op);
  count(CommOp::reduce, t.nbytes(), root);
  return w;
}

WorkHandle Communicator::all_reduce_async(Tensor& t, ReduceOp op) {
  check_tensor("all_reduce", t);
  WorkHandle w = do_all_reduce(t, op);
  count(CommOp::all_reduce, t.nbytes());
  return w;
}

WorkHandle Communicator::gather_async(const Tensor& in, Tensor& out, int root) {
  check_tensor("gather", in);
  check_root("gather", root);
  if (rank() == root) {  // out is only needed (and looked at) on the root
    check_tensor("gather", out);
    collective_shapes::whole_is_n_parts("gather", "out", out, "in", in, size());
  }
  WorkHandle w = do_gather(in, out, root);
  count(CommOp::gather, in.nbytes() * static_cast<std::uint64_t>(size()), root);
  return w;
}

WorkHandle Communicator::all_gather_async(const Tensor& in, Tensor& out) {
  check_tensor("all_gather", in);
  check_tensor("all_gather", out);
  collective_shapes::whole_is_n_parts("all_gather", "out", out, "in", in, size());
  WorkHandle w = do_all_gather(in, out);
  count(CommOp::all_gather, out.nbytes());
  return w;
}

WorkHandle Communicator::scatter_async(const Tensor& in, Tensor& out, int root) {
  check_tensor("scatter", out);
  check_root("scatter", root);
  if (rank() == root) {  // in is only needed (and looked at) on the root
    check_tensor("scatter", in);
    collective_shapes::whole_is_n_parts("scatter", "in", in, "out", out, size());
  }
  WorkHandle w = do_scatter(in, out, root);
  count(CommOp::scatter, out.nbytes() * static_cast<std::uint64_t>(size()), root);
  return w;
}

WorkHandle Communicator::reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp op) {
  check_tensor("reduce_scatter", in);
  check_tensor("reduce_scatter", out);
  collective_shapes::whole_is_n_parts("reduce_scatter", "in", in, "out", out, size());
  WorkHandle w = do_reduce_scatter(in, out, op);
  count(CommOp::reduce_scatter, in.nbytes());
  return w;
}

WorkHandle Communicator::all_to_all_async(const Tensor& in, Tensor& out) {
  check_tensor("all_to_all", in);
  check_tensor("all_to_all", out);
  collective_shapes::all_to_all(in, out, size());
  WorkHandle w = do_all_to_all(in, out);
  count(CommOp::all_to_all, in.nbytes());
  return w;
}

WorkHandle Communicator::all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts,
                                           Tensor& out, const std::vector<std::int64_t>& recv_counts) {
  check_tensor("all_to_allv", in);
  check_tensor("all_to_allv", out);
  collective_shapes::all_to_allv(in, send_counts, out, recv_counts, size(), rank());
  WorkHandle w = do_all_to_allv(in, send_counts, out, recv_counts);
  // No formula: the bytes sent are what really leaves this rank, every chunk but its own.
  std::uint64_t to_others = 0;
  for (int j = 0; j < size(); ++j)
    if (j != rank()) to_others += static_cast<std::uint64_t>(send_counts[static_cast<std::size_t>(j)]);
  record(CommOp::all_to_allv, in.nbytes(), to_others * dtype_size(in.dtype()));
  return w;
}

WorkHandle Communicator::send_async(const Tensor& t, int dst, int tag) {
  check_tensor("send", t);
  check_peer("send", dst);
  collective_shapes::tag("send", tag);
  WorkHandle w = do_send(t, dst, tag);
  count(CommOp::send, t.nbytes());
  return w;
}

WorkHandle Communicator::recv_async(Tensor& t, int src, int tag) {
  check_tensor("recv", t);
  check_peer("recv", src);
  collective_shapes::tag("recv", tag);
  WorkHandle w = do_recv(t, src, tag);
  count(CommOp::recv, t.nbytes());
  return w;
}

WorkHandle Communicator::barrier_async() {
  WorkHandle w = do_barrier();
  count(CommOp::barrier, 0);
  return w;
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  if (color < 0) throw Error("split: color " + std::to_string(color) + " is negative");
  return do_split(color, key);
}

void Communicator::check_tensor(const char* op, const Tensor& t) const {
  // Tensors are contiguous by construction (views are contiguous ranges), so defined-ness and
  // placement are all there is to check here; sizes are the op's own business.
  if (!t.defined()) throw Error(std::string(op) + ": the tensor is undefined");
  if (t.device() != device())
    throw Error(std::string(op) + ": tensor on " + t.device().str() + ", but this " + backend() +
                " communicator works on " + device().str() + " tensors");
}

void Communicator::check_root(const char* op, int root) const {
  if (root < 0 || root >= size())
    throw Error(std::string(op) + ": root " + std::to_string(root) + " is not a rank of this " +
                std::to_string(size()) + "-rank communicator");
}

void Communicator::check_peer(const char* op, int peer) const {
  if (peer < 0 || peer >= size())
    throw Error(std::string(op) + ": peer " + std::to_string(peer) + " is not a rank of this " +
                std::to_string(size()) + "-rank communicator");
}

CommBackend parse_comm_backend(const std::string& s) {
  static constexpr EnumNames<CommBackend, 4> kBackendNames{{{{CommBackend::automatic, "auto"},
                                                             {CommBackend::mpi, "mpi"},
                                                             {CommBackend::nccl, "nccl"},
                                                             {CommBackend::host_staged, "host-staged"}}}};
  return kBackendNames.parse(s, "communication backend");
}

}  // namespace usp
