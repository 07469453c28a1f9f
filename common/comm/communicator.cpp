// The backend-independent parts of Communicator: op names, byte accounting, argument checks
// and the sendrecv ring step. Backends call the checks on the issuing thread, before anything
// is queued or sent, so a bad argument fails on the rank that passed it without leaving a
// half-started op behind.
#include "common/comm/communicator.hpp"

#include <exception>
#include <string>

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

void Communicator::count(CommOp op, std::uint64_t payload_bytes, std::uint64_t bytes_sent) {
  const int i = static_cast<int>(op);
  stats_.calls[i] += 1;
  stats_.payload_bytes[i] += payload_bytes;
  stats_.bytes_sent[i] += bytes_sent;
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
  if (s == "auto") return CommBackend::automatic;
  if (s == "mpi") return CommBackend::mpi;
  if (s == "nccl") return CommBackend::nccl;
  if (s == "host-staged") return CommBackend::host_staged;
  throw UsageError("unknown communication backend '" + s + "' (expected auto, mpi, nccl or host-staged)");
}

}  // namespace usp
