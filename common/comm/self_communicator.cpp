// The one-rank communicator: what the world is without MPI. Every collective over one rank is
// either nothing (broadcast, all_reduce: the data is already the result) or a copy from the
// input to the output (gather, scatter, all_to_all ...). Its arguments are checked, and its ops
// counted in stats() (with zero bytes sent), by the same public ops as the real backends', so a
// chapter that runs on one rank behaves, and fails, as it would on many.
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
#include "common/error.hpp"

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

  // Every op's arguments are checked (and its bytes counted) by Communicator's public ops, as
  // for the real backends; what is left is the one-rank data movement.
 private:
  WorkHandle do_broadcast(Tensor&, int) override { return completed(); }
  // The sum (avg, max, min) of one contribution is itself.
  WorkHandle do_reduce(Tensor&, int, ReduceOp) override { return completed(); }
  WorkHandle do_all_reduce(Tensor&, ReduceOp) override { return completed(); }
  WorkHandle do_gather(const Tensor& in, Tensor& out, int) override { return copied(out, in); }
  WorkHandle do_all_gather(const Tensor& in, Tensor& out) override { return copied(out, in); }
  WorkHandle do_scatter(const Tensor& in, Tensor& out, int) override { return copied(out, in); }
  WorkHandle do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp) override { return copied(out, in); }
  WorkHandle do_all_to_all(const Tensor& in, Tensor& out) override { return copied(out, in); }
  // The counts' one entry is what this rank sends itself, equal on both sides (checked).
  WorkHandle do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>&, Tensor& out,
                            const std::vector<std::int64_t>&) override {
    return copied(out, in);
  }

  WorkHandle do_send(const Tensor& t, int, int tag) override {
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

  WorkHandle do_recv(Tensor& t, int, int tag) override {
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

  WorkHandle do_barrier() override { return completed(); }

  std::unique_ptr<Communicator> do_split(int, int) override { return std::make_unique<SelfCommunicator>(device_); }

  struct PendingSend {
    Tensor t;  // a private copy of the sent data
    int tag;
  };
  struct PendingRecv {
    Tensor t;  // the caller's buffer
    int tag;
    std::shared_ptr<SelfWork> work;
  };

  static WorkHandle copied(Tensor& out, const Tensor& in) {
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
