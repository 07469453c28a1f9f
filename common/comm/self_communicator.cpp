// The one-rank communicator: what the world is without MPI. Every collective over one rank is
// either nothing (broadcast, all_reduce: the data is already the result) or a copy from the
// input to the output (gather, scatter, all_to_all ...). It checks its arguments exactly as the
// real backends do, and counts ops in stats() (with zero bytes sent), so a chapter that runs on
// one rank behaves, and fails, as it would on many.
//
// Point-to-point to oneself works like a buffered MPI send: send() copies the tensor aside and
// completes at once, and a recv() takes the oldest pending send with its tag. A recv with no
// send to match completes when that send is posted; waiting on it before then would wait
// forever, so wait() reports the mistake instead.
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "common/comm/backends.hpp"
#include "common/comm/collective_shapes.hpp"
#include "common/comm/comm_volume.hpp"

namespace usp {
namespace {

class SelfWork final : public Work {
 public:
  explicit SelfWork(bool done, std::string pending_what = {})
      : done_(done), pending_what_(std::move(pending_what)) {}
  void wait() override {
    if (!done_) throw Error(pending_what_ + ": no matching send was ever posted on this one-rank "
                            "communicator, so this wait would never return");
    if (!error_.empty()) throw Error(error_);
  }
  bool test() override {
    if (done_ && !error_.empty()) throw Error(error_);
    return done_;
  }
  void complete(std::string error = {}) {
    done_ = true;
    error_ = std::move(error);
  }

 private:
  bool done_;
  std::string pending_what_;
  std::string error_;  // non-empty: the op failed with this message
};

WorkHandle completed() { return std::make_shared<SelfWork>(true); }

// Copies unless the two are already the same memory (in-place use of a one-rank collective).
void copy_unless_same(Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0 || dst.raw() == src.raw()) return;
  dst.copy_from(src);
}

class SelfCommunicator final : public Communicator {
 public:
  explicit SelfCommunicator(Device device) : device_(device) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "self"; }
  Device device() const override { return device_; }
  std::vector<int> world_ranks() const override { return {0}; }

  WorkHandle broadcast_async(Tensor& t, int root) override {
    check_tensor("broadcast", t);
    check_root("broadcast", root);
    account(CommOp::broadcast, t.nbytes());
    return completed();
  }

  WorkHandle reduce_async(Tensor& t, int root, ReduceOp) override {
    check_tensor("reduce", t);
    check_root("reduce", root);
    account(CommOp::reduce, t.nbytes());
    return completed();  // the sum (avg, max, min) of one contribution is itself
  }

  WorkHandle all_reduce_async(Tensor& t, ReduceOp) override {
    check_tensor("all_reduce", t);
    account(CommOp::all_reduce, t.nbytes());
    return completed();
  }

  WorkHandle gather_async(const Tensor& in, Tensor& out, int root) override {
    return gathered("gather", CommOp::gather, in, out, &root);
  }

  WorkHandle all_gather_async(const Tensor& in, Tensor& out) override {
    return gathered("all_gather", CommOp::all_gather, in, out, nullptr);
  }

  WorkHandle scatter_async(const Tensor& in, Tensor& out, int root) override {
    check_tensor("scatter", in);
    check_tensor("scatter", out);
    check_root("scatter", root);
    collective_shapes::whole_is_n_parts("scatter", "in", in, "out", out, 1);
    account(CommOp::scatter, in.nbytes());
    copy_unless_same(out, in);
    return completed();
  }

  WorkHandle reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp) override {
    check_tensor("reduce_scatter", in);
    check_tensor("reduce_scatter", out);
    collective_shapes::whole_is_n_parts("reduce_scatter", "in", in, "out", out, 1);
    account(CommOp::reduce_scatter, in.nbytes());
    copy_unless_same(out, in);
    return completed();
  }

  WorkHandle all_to_all_async(const Tensor& in, Tensor& out) override {
    check_tensor("all_to_all", in);
    check_tensor("all_to_all", out);
    collective_shapes::all_to_all(in, out, 1);
    account(CommOp::all_to_all, in.nbytes());
    copy_unless_same(out, in);
    return completed();
  }

  WorkHandle all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts,
                               Tensor& out, const std::vector<std::int64_t>& recv_counts) override {
    check_tensor("all_to_allv", in);
    check_tensor("all_to_allv", out);
    collective_shapes::all_to_allv(in, send_counts, out, recv_counts, 1);
    if (in.numel() != out.numel())
      throw Error("all_to_allv: on one rank what is sent to oneself (" + std::to_string(in.numel()) +
                  " elements) is what is received (" + std::to_string(out.numel()) + ")");
    count(CommOp::all_to_allv, in.nbytes(), 0);  // nothing goes to another rank
    copy_unless_same(out, in);
    return completed();
  }

  WorkHandle send_async(const Tensor& t, int dst, int tag) override {
    check_tensor("send", t);
    check_peer("send", dst);
    collective_shapes::tag("send", tag);
    account(CommOp::send, t.nbytes());
    // A receive already waiting takes the data directly; otherwise it is set aside, so that the
    // send completes now whatever the order of the matching recv.
    for (auto it = recvs_.begin(); it != recvs_.end(); ++it) {
      if (it->tag != tag) continue;
      PendingRecv r = std::move(*it);
      recvs_.erase(it);
      r.work->complete(deliver(r.t, t, tag));
      return completed();
    }
    sends_.push_back({t.clone(MemCategory::CommBuffer), tag});
    return completed();
  }

  WorkHandle recv_async(Tensor& t, int src, int tag) override {
    check_tensor("recv", t);
    check_peer("recv", src);
    collective_shapes::tag("recv", tag);
    account(CommOp::recv, t.nbytes());
    for (auto it = sends_.begin(); it != sends_.end(); ++it) {
      if (it->tag != tag) continue;
      PendingSend matched = std::move(*it);
      sends_.erase(it);
      auto work = std::make_shared<SelfWork>(true);
      work->complete(deliver(t, matched.t, tag));
      return work;
    }
    auto work = std::make_shared<SelfWork>(false, "recv(src 0, tag " + std::to_string(tag) + ")");
    recvs_.push_back({t, tag, work});
    return work;
  }

  WorkHandle barrier_async() override {
    account(CommOp::barrier, 0);
    return completed();
  }

  std::unique_ptr<Communicator> split(int color, int /*key*/) override {
    if (color < 0) throw Error("split: color " + std::to_string(color) + " is negative");
    return std::make_unique<SelfCommunicator>(device_);
  }

 private:
  struct PendingSend {
    Tensor t;  // a private copy of the sent data
    int tag;
  };
  struct PendingRecv {
    Tensor t;  // the caller's buffer
    int tag;
    std::shared_ptr<SelfWork> work;
  };

  void account(CommOp op, std::uint64_t bytes) {
    const CommVolume v = comm_volume(op, bytes, 1, 0, 0);
    count(op, v.payload_bytes, v.bytes_sent);
  }

  WorkHandle gathered(const char* name, CommOp op, const Tensor& in, Tensor& out, const int* root) {
    check_tensor(name, in);
    check_tensor(name, out);
    if (root) check_root(name, *root);
    collective_shapes::whole_is_n_parts(name, "out", out, "in", in, 1);
    account(op, out.nbytes());
    copy_unless_same(out, in);
    return completed();
  }

  // Copies a matched send into the receive buffer; returns the error, if any, for the recv's
  // Work (a mismatch fails the receive at wait(), as on the MPI backend).
  static std::string deliver(Tensor& dst, const Tensor& src, int tag) {
    if (dst.nbytes() != src.nbytes() || dst.dtype() != src.dtype())
      return "recv(src 0, tag " + std::to_string(tag) + "): expected " + dst.str(0) +
             " but the matching send carries " + src.str(0);
    copy_unless_same(dst, src);
    return {};
  }

  Device device_;
  std::deque<PendingSend> sends_;
  std::deque<PendingRecv> recvs_;
};

}  // namespace

std::unique_ptr<Communicator> make_self_communicator(Device device) {
  return std::make_unique<SelfCommunicator>(device);
}

}  // namespace usp
