// The NCCL backend: collectives over CUDA tensors, one GPU per rank, on communication streams of
// their own so that they overlap compute.
//
// Ordering. Each op records an event on the compute stream and makes its communication stream
// wait on it, so NCCL reads the data as computed so far; it then enqueues the NCCL call(s) and
// records a completion event. Work::wait() makes the compute stream wait on that event (later
// kernels see the result) and blocks the host until the event has fired. That host block is
// stricter than NCCL needs (stream ordering alone would keep the GPU correct), and chosen on
// purpose: wait() then means the same on every backend (the result is in place, an error of
// the op is thrown here, and a timer around it measures the communication, which the bandwidth
// and overlap chapters rely on). It waits on the op's own event, not on the whole compute
// stream, so kernels queued between issue and wait() keep the GPU busy meanwhile. While it
// waits it polls ncclCommGetAsyncError, so a failed peer ends in an error (and an aborted
// communicator) instead of a hang. test() is cudaEventQuery on the completion event.
//
// Lanes. A communicator is three NCCL communicators over the same ranks, each with its own
// non-blocking stream: one for collectives, one for point-to-point messages travelling from a
// lower to a higher rank ("up"), one for messages from higher to lower ("down"). NCCL kernels
// block until their peer's matching kernel runs, so on a single stream the ring step
// recv_async(from left); send_async(to right) that Communicator::sendrecv issues deadlocks: every
// rank's receive waits for a send its neighbour queued behind its own receive. With one lane per
// direction a rank's queue on each lane only ever waits for lower ranks (up) or higher ranks
// (down), which cannot form a cycle; and point-to-point traffic never queues behind a
// collective. Messages between two ranks in one direction share a lane, so they stay in order.
// Messages to oneself never reach NCCL (see SelfMailbox).
//
// split() uses ncclCommSplit (NCCL >= 2.18), which reuses the parent's bootstrap: no MPI
// communicator has to outlive the NCCL one. The group's world ranks are learned with one
// all-gather of (color, key) on the parent, ordered as ncclCommSplit orders them.
//
// Tags: NCCL has none; messages between two ranks match in issue order (tags must still be >= 0,
// and messages to oneself do match by tag). Data types: f32, bf16, f16, i32; fp8 (e4m3, e5m2)
// moves as bytes (ncclUint8) and cannot be reduced here.
#if defined(USP_HAVE_MPI)

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/comm/backends.hpp"
#include "common/comm/watchdog.hpp"
#include "common/cuda_support.hpp"
#include "common/error.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"

namespace usp {
namespace {

[[noreturn]] void throw_nccl_error(ncclResult_t r, const char* expr) {
  std::string msg = std::string("NCCL error: ") + ncclGetErrorString(r) + " in " + expr;
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') msg += ": " + std::string(detail);
  throw Error(msg);
}

#define USP_NCCL_CHECK(expr)                                                  \
  do {                                                                        \
    const ncclResult_t usp_nccl_res_ = (expr);                                \
    if (usp_nccl_res_ != ncclSuccess) throw_nccl_error(usp_nccl_res_, #expr); \
  } while (0)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i32: return ncclInt32;
    case DType::e4m3:
    case DType::e5m2: return ncclUint8;  // moved as bytes; reductions refused below
  }
  throw Error("nccl: unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  throw Error("nccl: unknown reduce op");
}

void check_reducible(const char* op, DType t) {
  if (t == DType::e4m3 || t == DType::e5m2)
    throw Error(std::string(op) + ": cannot reduce " + dtype_name(t) + " tensors over NCCL (fp8 is "
                "moved as raw bytes here); reduce in bf16 or f32 and cast afterwards");
}

char* bytes_at(const Tensor& t, std::int64_t elements) {
  return static_cast<char*>(t.raw()) + elements * static_cast<std::int64_t>(dtype_size(t.dtype()));
}

std::size_t ucount(std::int64_t n) { return static_cast<std::size_t>(n); }

// ncclGroupStart/End as a scope: if an op inside the group throws, the group is still closed,
// so NCCL's per-thread group depth stays balanced for the next op.
class NcclGroup {
 public:
  NcclGroup() { USP_NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    if (open_) (void)ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    USP_NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

// An owned CUDA event without timing (cheaper to record and to wait on).
class Event {
 public:
  Event() { USP_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);  // safe even while still pending
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

enum Lane : int { kCollective = 0, kUp = 1, kDown = 2 };
constexpr int kNumLanes = 3;

// What a communicator and its pending Works share: the NCCL communicators and their streams.
// Works hold it too, so a Work that outlives its Communicator still has valid comms and streams.
struct NcclState {
  std::array<ncclComm_t, kNumLanes> comm{};
  std::array<cudaStream_t, kNumLanes> stream{};
  bool aborted = false;
  Event ready;  // re-recorded by every op on the compute stream (a wait captures its state)

  ~NcclState() {
    // Destruction must not throw. ncclCommDestroy waits for the ops still in flight.
    for (int i = 0; i < kNumLanes; ++i) {
      if (comm[i] != nullptr) (void)ncclCommDestroy(comm[i]);
      if (stream[i] != nullptr) (void)cudaStreamDestroy(stream[i]);
    }
  }

  void require_live(const char* op) const {
    if (aborted) throw Error(std::string(op) + ": NCCL communicator was aborted after an earlier error");
  }

  // Turns an asynchronous NCCL failure (a peer died, a network error) into an exception. The
  // communicators are aborted first: their kernels would otherwise wait for the peer forever.
  void check_async_error() {
    require_live("wait");
    for (int i = 0; i < kNumLanes; ++i) {
      if (comm[i] == nullptr) continue;  // a lane sharing the collective communicator
      ncclResult_t async = ncclSuccess;
      USP_NCCL_CHECK(ncclCommGetAsyncError(comm[i], &async));
      if (async == ncclSuccess || async == ncclInProgress) continue;
      for (auto& c : comm) {
        if (c != nullptr) (void)ncclCommAbort(c);
        c = nullptr;
      }
      aborted = true;
      throw_nccl_error(async, "an asynchronous NCCL operation (communicator aborted)");
    }
  }
};

// When an op is over: its completion event, recorded when the op was enqueued, or later for a
// receive from oneself that waits for its matching send.
struct Completion {
  std::unique_ptr<Event> done;  // null while not enqueued yet
  std::vector<Tensor> keep;     // the op's buffers (and staging), released once it is over
  std::string pending_what;     // what an unenqueued op is waiting for, for the error message
  watchdog::Subject subject;    // what a wait() on it waits for, and since when
  watchdog::Watch::Clock::time_point issued = watchdog::Watch::Clock::now();
};

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclState> state, std::shared_ptr<Completion> completion)
      : state_(std::move(state)), completion_(std::move(completion)) {}

  ~NcclWork() override {
    // Dropped without wait(): still order the compute stream after the op, so memory the op
    // uses, once released, cannot be handed to a later kernel while NCCL still touches it.
    if (!complete_ && completion_->done) (void)cudaStreamWaitEvent(cuda::compute_stream(), completion_->done->get(), 0);
  }

  void wait() override {
    if (complete_) return;
    if (!completion_->done)
      throw Error(completion_->pending_what + ": nothing matching was issued before wait(), so it can never complete");
    const cudaEvent_t done = completion_->done->get();
    USP_CUDA_CHECK(cudaStreamWaitEvent(cuda::compute_stream(), done, 0));
    // The op has waited on its peers since it was issued, not only since this wait() began.
    const watchdog::Watch watch(completion_->subject, completion_->issued);
    for (;;) {
      const cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) USP_CUDA_CHECK(q);
      state_->check_async_error();
      std::this_thread::yield();
    }
    finish();
  }

  bool test() override {
    if (complete_) return true;
    if (!completion_->done) return false;
    const cudaError_t q = cudaEventQuery(completion_->done->get());
    if (q == cudaErrorNotReady) {
      state_->check_async_error();
      return false;
    }
    USP_CUDA_CHECK(q);
    USP_CUDA_CHECK(cudaStreamWaitEvent(cuda::compute_stream(), completion_->done->get(), 0));
    finish();
    return true;
  }

 private:
  void finish() {
    completion_->keep.clear();  // the op is over on the device: its buffers may go
    complete_ = true;
  }

  std::shared_ptr<NcclState> state_;
  std::shared_ptr<Completion> completion_;
  bool complete_ = false;
};

// Messages a rank sends to itself, matched by tag in issue order as MPI would. NCCL cannot
// carry them: a lone receive from oneself waits for a send queued behind it. A send that finds
// its receive copies straight into it; a send that comes first is copied into a device buffer
// (CommBuffer) and completes at once, as an eager MPI send would.
class SelfMailbox {
 public:
  struct Message {
    int tag;
    Tensor data;                             // sent first: the snapshot; received first: the destination
    std::shared_ptr<Completion> completion;  // received first: the receive's, filled on match
  };

  std::unique_ptr<Message> take_send(int tag) { return take(sends_, tag); }
  std::unique_ptr<Message> take_recv(int tag) { return take(recvs_, tag); }
  void post_send(Message m) { sends_.push_back(std::move(m)); }
  void post_recv(Message m) { recvs_.push_back(std::move(m)); }

 private:
  static std::unique_ptr<Message> take(std::deque<Message>& queue, int tag) {
    for (auto it = queue.begin(); it != queue.end(); ++it)
      if (it->tag == tag) {
        auto m = std::make_unique<Message>(std::move(*it));
        queue.erase(it);
        return m;
      }
    return nullptr;
  }

  std::deque<Message> sends_, recvs_;
};

class NcclCommunicator final : public Communicator {
 public:
  // The communicator of `bootstrap`'s ranks: rank 0 creates the unique id and broadcasts it.
  NcclCommunicator(Communicator& bootstrap, Device device)
      : device_(device), world_ranks_(bootstrap.world_ranks()), rank_(bootstrap.rank()), size_(bootstrap.size()) {
    if (!device_.is_cuda()) throw Error("make_nccl: device must be a CUDA device, got " + device_.str());
    if (!bootstrap.device().is_cpu())
      throw Error("make_nccl: the bootstrap communicator must take CPU tensors, '" +
                  bootstrap.backend() + "' takes " + bootstrap.device().str());
    // NCCL binds communicators to the current device, and CUDA the streams and events.
    cuda::set_device(device_.index);
    state_ = std::make_shared<NcclState>();

    ncclUniqueId id{};
    static_assert(sizeof(id) == NCCL_UNIQUE_ID_BYTES);
    Tensor id_bytes = Tensor::zeros({NCCL_UNIQUE_ID_BYTES}, DType::e4m3, MemCategory::CommBuffer, Device::cpu());
    if (rank_ == 0) {
      USP_NCCL_CHECK(ncclGetUniqueId(&id));
      std::memcpy(id_bytes.data<std::uint8_t>(), &id, sizeof(id));
    }
    bootstrap.broadcast(id_bytes, 0);
    std::memcpy(&id, id_bytes.data<std::uint8_t>(), sizeof(id));

    USP_NCCL_CHECK(ncclCommInitRank(&state_->comm[kCollective], size_, id, rank_));
    open_lanes();
  }

  // A communicator made by ncclCommSplit (see split()); the device is already current.
  NcclCommunicator(ncclComm_t comm, Device device, std::vector<int> world_ranks, int rank)
      : state_(std::make_shared<NcclState>()), device_(device), world_ranks_(std::move(world_ranks)),
        rank_(rank), size_(static_cast<int>(world_ranks_.size())) {
    state_->comm[kCollective] = comm;
    open_lanes();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return device_; }
  std::vector<int> world_ranks() const override { return world_ranks_; }

 private:
  // Arguments were checked, and bytes counted, by Communicator's public ops; NCCL's own limit
  // (no fp8 reductions) is checked here.
  WorkHandle do_broadcast(Tensor& t, int root) override {
    return launch("broadcast", kCollective, {t}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclBroadcast(t.raw(), t.raw(), ucount(t.numel()), nccl_type(t.dtype()), root, c, s));
    });
  }

  WorkHandle do_reduce(Tensor& t, int root, ReduceOp op) override {
    check_reducible("reduce", t.dtype());
    return launch("reduce", kCollective, {t}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclReduce(t.raw(), t.raw(), ucount(t.numel()), nccl_type(t.dtype()), nccl_op(op), root, c, s));
    });
  }

  WorkHandle do_all_reduce(Tensor& t, ReduceOp op) override {
    check_reducible("all_reduce", t.dtype());
    return launch("all_reduce", kCollective, {t}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclAllReduce(t.raw(), t.raw(), ucount(t.numel()), nccl_type(t.dtype()), nccl_op(op), c, s));
    });
  }

  WorkHandle do_gather(const Tensor& in, Tensor& out, int root) override {
    const bool is_root = rank_ == root;
    const std::int64_t n = in.numel();
    return launch("gather", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      const ncclDataType_t type = nccl_type(in.dtype());
      if (!is_root) {
        USP_NCCL_CHECK(ncclSend(in.raw(), ucount(n), type, root, c, s));
        return;
      }
      copy_async(bytes_at(out, root * n), in.raw(), in.nbytes(), s);
      NcclGroup group;
      for (int r = 0; r < size_; ++r)
        if (r != root) USP_NCCL_CHECK(ncclRecv(bytes_at(out, r * n), ucount(n), type, r, c, s));
      group.end();
    });
  }

  WorkHandle do_all_gather(const Tensor& in, Tensor& out) override {
    return launch("all_gather", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclAllGather(in.raw(), out.raw(), ucount(in.numel()), nccl_type(in.dtype()), c, s));
    });
  }

  WorkHandle do_scatter(const Tensor& in, Tensor& out, int root) override {
    const bool is_root = rank_ == root;
    const std::int64_t n = out.numel();
    return launch("scatter", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      const ncclDataType_t type = nccl_type(out.dtype());
      if (!is_root) {
        USP_NCCL_CHECK(ncclRecv(out.raw(), ucount(n), type, root, c, s));
        return;
      }
      copy_async(out.raw(), bytes_at(in, root * n), out.nbytes(), s);
      NcclGroup group;
      for (int r = 0; r < size_; ++r)
        if (r != root) USP_NCCL_CHECK(ncclSend(bytes_at(in, r * n), ucount(n), type, r, c, s));
      group.end();
    });
  }

  WorkHandle do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
    check_reducible("reduce_scatter", in.dtype());
    return launch("reduce_scatter", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclReduceScatter(in.raw(), out.raw(), ucount(out.numel()), nccl_type(in.dtype()),
                                       nccl_op(op), c, s));
    });
  }

  WorkHandle do_all_to_all(const Tensor& in, Tensor& out) override {
    const std::vector<std::int64_t> counts(static_cast<std::size_t>(size_), in.numel() / size_);
    return launch("all_to_all", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      exchange(in, counts, out, counts, c, s);
    });
  }

  WorkHandle do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                            const std::vector<std::int64_t>& recv_counts) override {
    return launch("all_to_allv", kCollective, {in, out}, [&](ncclComm_t c, cudaStream_t s) {
      exchange(in, send_counts, out, recv_counts, c, s);
    });
  }

  WorkHandle do_send(const Tensor& t, int dst, int tag) override {
    if (dst == rank_) return send_to_self(t, tag);
    return launch("send", dst > rank_ ? kUp : kDown, {t}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclSend(t.raw(), ucount(t.numel()), nccl_type(t.dtype()), dst, c, s));
    }, dst);
  }

  WorkHandle do_recv(Tensor& t, int src, int tag) override {
    if (src == rank_) return recv_from_self(t, tag);
    return launch("recv", src < rank_ ? kUp : kDown, {t}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclRecv(t.raw(), ucount(t.numel()), nccl_type(t.dtype()), src, c, s));
    }, src);
  }

  // An all-reduce of one int: it cannot complete on any rank before every rank has issued it,
  // and wait() blocks the host until it has completed.
  WorkHandle do_barrier() override {
    Tensor token = Tensor::zeros({1}, DType::i32, MemCategory::CommBuffer, device_);
    return launch("barrier", kCollective, {token}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclAllReduce(token.raw(), token.raw(), 1, ncclInt32, ncclSum, c, s));
    });
  }

  std::unique_ptr<Communicator> do_split(int color, int key) override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    state_->require_live("split");
    // Learn every rank's (color, key), so this rank knows its group's world ranks.
    Tensor mine = Tensor::zeros({2}, DType::i32, MemCategory::Temporary, Device::cpu());
    mine.data<std::int32_t>()[0] = color;
    mine.data<std::int32_t>()[1] = key;
    Tensor mine_dev = mine.to(device_, MemCategory::Temporary);
    Tensor all_dev = Tensor::empty({2 * static_cast<std::int64_t>(size_)}, DType::i32, MemCategory::Temporary, device_);
    launch("split", kCollective, {mine_dev, all_dev}, [&](ncclComm_t c, cudaStream_t s) {
      USP_NCCL_CHECK(ncclAllGather(mine_dev.raw(), all_dev.raw(), 2, ncclInt32, c, s));
    })->wait();
    const Tensor all = all_dev.to(Device::cpu(), MemCategory::Temporary);
    const std::int32_t* ck = all.data<std::int32_t>();

    // The group: ranks of my color, by key and then by rank (ncclCommSplit's order too).
    std::vector<int> members;
    for (int r = 0; r < size_; ++r)
      if (ck[2 * r] == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return ck[2 * a + 1] < ck[2 * b + 1]; });
    std::vector<int> group_world_ranks;
    int my_rank = -1;
    for (std::size_t i = 0; i < members.size(); ++i) {
      group_world_ranks.push_back(world_ranks_[static_cast<std::size_t>(members[i])]);
      if (members[i] == rank_) my_rank = static_cast<int>(i);
    }

    ncclComm_t child = nullptr;
    USP_NCCL_CHECK(ncclCommSplit(state_->comm[kCollective], color, key, &child, nullptr));
    int nccl_rank = -1;
    const ncclResult_t asked = ncclCommUserRank(child, &nccl_rank);
    if (asked != ncclSuccess || nccl_rank != my_rank) {
      (void)ncclCommDestroy(child);
      if (asked != ncclSuccess) throw_nccl_error(asked, "ncclCommUserRank");
      throw Error("split: NCCL ordered the new group differently (rank " + std::to_string(nccl_rank) +
                  ", expected " + std::to_string(my_rank) + ")");
    }
    return std::make_unique<NcclCommunicator>(child, device_, std::move(group_world_ranks), my_rank);
#else
    (void)color;
    (void)key;
    throw Error("split: this NCCL (" + std::to_string(NCCL_VERSION_CODE) + ") has no ncclCommSplit; "
                "NCCL >= 2.18 is needed, or split the MPI world and call make_nccl on the result");
#endif
  }

  // The point-to-point lanes are copies of the collective communicator (same ranks, same
  // order), split off it; every lane gets its own non-blocking stream.
  void open_lanes() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    for (int lane : {kUp, kDown})
      USP_NCCL_CHECK(ncclCommSplit(state_->comm[kCollective], 0, rank_, &state_->comm[lane], nullptr));
#else
    // No ncclCommSplit: point-to-point shares the collective lane (rings of sendrecv may hang).
    state_->comm[kUp] = state_->comm[kDown] = nullptr;
#endif
    for (int lane = 0; lane < kNumLanes; ++lane)
      USP_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream[lane], cudaStreamNonBlocking));
  }

  ncclComm_t lane_comm(int lane) const {
    return state_->comm[lane] != nullptr ? state_->comm[lane] : state_->comm[kCollective];
  }

  // Enqueues one op on a lane's stream, after the compute stream's work so far, and returns a
  // Work completing with it. peer: the rank a send or receive waits for; -1 for a collective.
  template <class Enqueue>
  WorkHandle launch(const char* op, int lane, std::vector<Tensor> keep, Enqueue&& enqueue, int peer = -1) {
    return std::make_shared<NcclWork>(state_, enqueue_now(op, lane, std::move(keep), enqueue, peer));
  }

  // What the watchdog names for an op of this communicator waiting on peer (-1: on the group).
  watchdog::Subject subject(const char* op, int peer) const {
    watchdog::Subject s{op, label(), world_ranks_[static_cast<std::size_t>(rank_)], {}, peer < 0};
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && (peer < 0 || r == peer)) s.peers.push_back(world_ranks_[static_cast<std::size_t>(r)]);
    return s;
  }

  template <class Enqueue>
  std::shared_ptr<Completion> enqueue_now(const char* op, int lane, std::vector<Tensor> keep, Enqueue&& enqueue,
                                          int peer = -1) {
    state_->require_live(op);
    const cudaStream_t stream = state_->stream[lane];
    USP_CUDA_CHECK(cudaEventRecord(state_->ready.get(), cuda::compute_stream()));
    USP_CUDA_CHECK(cudaStreamWaitEvent(stream, state_->ready.get(), 0));
    enqueue(lane_comm(lane), stream);
    auto completion = std::make_shared<Completion>();
    completion->subject = subject(op, peer);
    completion->done = std::make_unique<Event>();
    USP_CUDA_CHECK(cudaEventRecord(completion->done->get(), stream));
    std::erase_if(keep, [](const Tensor& t) { return !t.defined(); });
    completion->keep = std::move(keep);
    return completion;
  }

  // A device-to-device copy as a "communication" op on the collective lane's stream.
  std::shared_ptr<Completion> copy_now(const char* op, const Tensor& dst, const Tensor& src, std::vector<Tensor> keep) {
    if (dst.nbytes() != src.nbytes() || dst.dtype() != src.dtype())
      throw Error(std::string(op) + ": message to oneself is " + std::to_string(src.numel()) + " " +
                  dtype_name(src.dtype()) + " elements, the receive expects " + std::to_string(dst.numel()) +
                  " " + dtype_name(dst.dtype()));
    return enqueue_now(op, kCollective, std::move(keep),
                       [&](ncclComm_t, cudaStream_t s) { copy_async(dst.raw(), src.raw(), src.nbytes(), s); }, rank_);
  }

  WorkHandle send_to_self(const Tensor& t, int tag) {
    if (auto recv = self_.take_recv(tag)) {
      // The receive came first: copy into it; the send and the receive complete together.
      auto c = copy_now("send", recv->data, t, {t, recv->data});
      recv->completion->done = std::move(c->done);
      recv->completion->keep = std::move(c->keep);
      return std::make_shared<NcclWork>(state_, recv->completion);
    }
    Tensor snapshot = Tensor::empty(t.shape(), t.dtype(), MemCategory::CommBuffer, device_);
    auto c = copy_now("send", snapshot, t, {t});
    self_.post_send({tag, snapshot, nullptr});
    return std::make_shared<NcclWork>(state_, c);
  }

  WorkHandle recv_from_self(Tensor& t, int tag) {
    if (auto sent = self_.take_send(tag)) return std::make_shared<NcclWork>(state_, copy_now("recv", t, sent->data, {t, sent->data}));
    auto pending = std::make_shared<Completion>();
    pending->keep = {t};
    pending->pending_what = "recv from itself (tag " + std::to_string(tag) + ")";
    pending->subject = subject("recv", rank_);
    self_.post_recv({tag, t, pending});
    return std::make_shared<NcclWork>(state_, pending);
  }

  // chunk j of `in` (send_counts[j] elements) to rank j, chunk i of `out` from rank i; the
  // chunk a rank keeps is a device copy, the rest one NCCL group of sends and receives.
  void exchange(const Tensor& in, const std::vector<std::int64_t>& send_counts, const Tensor& out,
                const std::vector<std::int64_t>& recv_counts, ncclComm_t c, cudaStream_t s) const {
    const ncclDataType_t type = nccl_type(in.dtype());
    const auto me = static_cast<std::size_t>(rank_);
    std::vector<std::int64_t> send_off(send_counts.size()), recv_off(recv_counts.size());
    std::exclusive_scan(send_counts.begin(), send_counts.end(), send_off.begin(), std::int64_t{0});
    std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_off.begin(), std::int64_t{0});
    copy_async(bytes_at(out, recv_off[me]), bytes_at(in, send_off[me]),
               ucount(send_counts[me]) * dtype_size(in.dtype()), s);
    NcclGroup group;
    for (int r = 0; r < size_; ++r) {
      const auto j = static_cast<std::size_t>(r);
      if (r == rank_) continue;
      // Counts agree pairwise (rank i's send_counts[j] is rank j's recv_counts[i]), so both
      // sides skip an empty chunk together.
      if (send_counts[j] > 0) USP_NCCL_CHECK(ncclSend(bytes_at(in, send_off[j]), ucount(send_counts[j]), type, r, c, s));
      if (recv_counts[j] > 0) USP_NCCL_CHECK(ncclRecv(bytes_at(out, recv_off[j]), ucount(recv_counts[j]), type, r, c, s));
    }
    group.end();
  }

  static void copy_async(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
    if (bytes > 0) USP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  }

  std::shared_ptr<NcclState> state_;
  SelfMailbox self_;
  Device device_;
  std::vector<int> world_ranks_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl(Communicator& bootstrap, Device device) {
  return std::make_unique<NcclCommunicator>(bootstrap, device);
}

}  // namespace usp

#endif  // USP_HAVE_MPI
