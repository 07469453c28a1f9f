// The host-staged backend: collectives over CUDA tensors carried out by a CPU (MPI)
// communicator on host copies of them. It is what several ranks sharing one GPU use, since NCCL
// refuses two ranks on the same device.
//
// Each op: copy the device buffers the op reads into fresh host tensors (category CommBuffer,
// so the staging memory is visible in the memory profile), issue the wrapped communicator's
// async op on those, and when that op completes (wait(), or a test() that finds it done) copy
// the buffers the op writes back to the device and release the staging tensors.
//
// Ordering with compute: the copies run on the compute stream (usp::cuda::copy is a plain
// cudaMemcpy on the legacy default stream), so the device-to-host copy at issue waits for the
// kernels that produced the data, and the copy back is ordered before any kernel issued after
// wait(). The wire transfer runs on the MPI backend's progress thread and overlaps whatever
// the caller does between issue and wait(); the staging copies themselves do not overlap.
#if defined(USP_HAVE_MPI)

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/comm/backends.hpp"
#include "common/comm/collective_shapes.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/error.hpp"

namespace usp {
namespace {

// A pending op of the wrapped communicator plus what must happen when it completes.
class HostStagedWork final : public Work {
 public:
  // copy_back: (device tensor, host staging tensor) pairs written back on completion.
  // staging: every host tensor of the op, kept alive (the inner op reads/writes them) until then.
  HostStagedWork(WorkHandle inner, std::vector<std::pair<Tensor, Tensor>> copy_back,
                 std::vector<Tensor> staging)
      : inner_(std::move(inner)), copy_back_(std::move(copy_back)), staging_(std::move(staging)) {}

  void wait() override {
    if (done_) return;
    inner_->wait();  // rethrows the op's error; then nothing is copied back
    finish();
  }

  bool test() override {
    if (done_) return true;
    if (!inner_->test()) return false;
    finish();  // a test() that sees completion completes the op, as MPI_Test does
    return true;
  }

 private:
  void finish() {
    for (auto& [device_tensor, host_tensor] : copy_back_) device_tensor.copy_from(host_tensor);
    // Release the staging memory now rather than when the handle dies, so that the tracker's
    // CommBuffer bytes fall back as soon as the op is over.
    copy_back_.clear();
    staging_.clear();
    inner_.reset();
    done_ = true;
  }

  WorkHandle inner_;
  std::vector<std::pair<Tensor, Tensor>> copy_back_;
  std::vector<Tensor> staging_;
  bool done_ = false;
};

class HostStagedCommunicator final : public Communicator {
 public:
  HostStagedCommunicator(std::unique_ptr<Communicator> cpu_comm, Device device)
      : inner_(std::move(cpu_comm)), device_(device) {
    if (!inner_) throw Error("make_host_staged: no CPU communicator given");
    if (!inner_->device().is_cpu())
      throw Error("make_host_staged: the wrapped communicator must take CPU tensors, '" +
                  inner_->backend() + "' takes " + inner_->device().str());
    if (!device_.is_cuda()) throw Error("make_host_staged: device must be a CUDA device, got " + device_.str());
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return "mpi-host-staged"; }
  Device device() const override { return device_; }
  std::vector<int> world_ranks() const override { return inner_->world_ranks(); }

  WorkHandle broadcast_async(Tensor& t, int root) override {
    check_tensor("broadcast", t);
    check_root("broadcast", root);
    const bool is_root = rank() == root;
    Tensor h = stage(t, /*copy_in=*/is_root);  // only the root's contents matter
    auto inner = inner_->broadcast_async(h, root);
    count_op(CommOp::broadcast, t.nbytes(), root);
    return finish_later(std::move(inner), is_root ? Pairs{} : Pairs{{t, h}}, {h});
  }

  WorkHandle reduce_async(Tensor& t, int root, ReduceOp op) override {
    check_tensor("reduce", t);
    check_root("reduce", root);
    Tensor h = stage(t, true);
    auto inner = inner_->reduce_async(h, root, op);
    count_op(CommOp::reduce, t.nbytes(), root);
    // Only the root receives the result; the others' tensors stay as they were.
    return finish_later(std::move(inner), rank() == root ? Pairs{{t, h}} : Pairs{}, {h});
  }

  WorkHandle all_reduce_async(Tensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t);
    Tensor h = stage(t, true);
    auto inner = inner_->all_reduce_async(h, op);
    count_op(CommOp::all_reduce, t.nbytes());
    return finish_later(std::move(inner), {{t, h}}, {h});
  }

  WorkHandle gather_async(const Tensor& in, Tensor& out, int root) override {
    check_tensor("gather", in);
    check_root("gather", root);
    const bool is_root = rank() == root;
    if (is_root) {
      check_tensor("gather", out);
      collective_shapes::whole_is_n_parts("gather", "out", out, "in", in, size());
    }
    Tensor hin = stage(in, true);
    Tensor hout = is_root ? stage(out, false) : Tensor();  // only the root's output is written
    auto inner = inner_->gather_async(hin, hout, root);
    count_op(CommOp::gather, in.nbytes() * static_cast<std::uint64_t>(size()), root);
    return finish_later(std::move(inner), is_root ? Pairs{{out, hout}} : Pairs{}, {hin, hout});
  }

  WorkHandle all_gather_async(const Tensor& in, Tensor& out) override {
    check_tensor("all_gather", in);
    check_tensor("all_gather", out);
    collective_shapes::whole_is_n_parts("all_gather", "out", out, "in", in, size());
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_gather_async(hin, hout);
    count_op(CommOp::all_gather, in.nbytes() * static_cast<std::uint64_t>(size()));
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle scatter_async(const Tensor& in, Tensor& out, int root) override {
    check_root("scatter", root);
    const bool is_root = rank() == root;
    check_tensor("scatter", out);
    if (is_root) {
      check_tensor("scatter", in);
      collective_shapes::whole_is_n_parts("scatter", "in", in, "out", out, size());
    }
    Tensor hin = is_root ? stage(in, true) : Tensor();  // only the root's input is read
    Tensor hout = stage(out, false);
    auto inner = inner_->scatter_async(hin, hout, root);
    count_op(CommOp::scatter, out.nbytes() * static_cast<std::uint64_t>(size()), root);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle reduce_scatter_async(const Tensor& in, Tensor& out, ReduceOp op) override {
    check_tensor("reduce_scatter", in);
    check_tensor("reduce_scatter", out);
    collective_shapes::whole_is_n_parts("reduce_scatter", "in", in, "out", out, size());
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->reduce_scatter_async(hin, hout, op);
    count_op(CommOp::reduce_scatter, in.nbytes());
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle all_to_all_async(const Tensor& in, Tensor& out) override {
    check_tensor("all_to_all", in);
    check_tensor("all_to_all", out);
    collective_shapes::all_to_all(in, out, size());
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_to_all_async(hin, hout);
    count_op(CommOp::all_to_all, in.nbytes());
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle all_to_allv_async(const Tensor& in, const std::vector<std::int64_t>& send_counts,
                               Tensor& out, const std::vector<std::int64_t>& recv_counts) override {
    check_tensor("all_to_allv", in);
    check_tensor("all_to_allv", out);
    collective_shapes::all_to_allv(in, send_counts, out, recv_counts, size());
    // Bytes sent are what really leaves this rank: every chunk but the one it keeps.
    const std::uint64_t esize = dtype_size(in.dtype());
    std::uint64_t sent = 0;
    for (int j = 0; j < size(); ++j)
      if (j != rank()) sent += static_cast<std::uint64_t>(send_counts[static_cast<std::size_t>(j)]) * esize;
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_to_allv_async(hin, send_counts, hout, recv_counts);
    count(CommOp::all_to_allv, in.nbytes(), sent);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle send_async(const Tensor& t, int dst, int tag) override {
    check_tensor("send", t);
    check_peer("send", dst);
    Tensor h = stage(t, true);
    auto inner = inner_->send_async(h, dst, tag);
    count_op(CommOp::send, t.nbytes());
    return finish_later(std::move(inner), {}, {h});
  }

  WorkHandle recv_async(Tensor& t, int src, int tag) override {
    check_tensor("recv", t);
    check_peer("recv", src);
    Tensor h = stage(t, false);
    auto inner = inner_->recv_async(h, src, tag);
    count_op(CommOp::recv, t.nbytes());
    return finish_later(std::move(inner), {{t, h}}, {h});
  }

  WorkHandle barrier_async() override {
    auto inner = inner_->barrier_async();  // nothing to stage
    count_op(CommOp::barrier, 0);
    return inner;
  }

  // The same split of the CPU ranks, staged onto the same device.
  std::unique_ptr<Communicator> split(int color, int key) override {
    return make_host_staged(inner_->split(color, key), device_);
  }

 private:
  using Pairs = std::vector<std::pair<Tensor, Tensor>>;

  void count_op(CommOp op, std::uint64_t payload, int root = 0) {
    const CommVolume v = comm_volume(op, payload, size(), rank(), root);
    count(op, v.payload_bytes, v.bytes_sent);
  }

  // A host copy of t for the inner op (undefined stays undefined: a non-root's gather output).
  static Tensor stage(const Tensor& t, bool copy_in) {
    if (!t.defined()) return {};
    Tensor h = Tensor::empty(t.shape(), t.dtype(), MemCategory::CommBuffer, Device::cpu());
    if (copy_in) h.copy_from(t);
    return h;
  }

  static WorkHandle finish_later(WorkHandle inner, Pairs copy_back, std::vector<Tensor> staging) {
    // Undefined entries (no buffer on this rank) need neither a copy nor a keep-alive.
    Pairs back;
    for (auto& p : copy_back)
      if (p.first.defined() && p.second.defined()) back.push_back(std::move(p));
    std::vector<Tensor> keep;
    for (auto& t : staging)
      if (t.defined()) keep.push_back(std::move(t));
    return std::make_shared<HostStagedWork>(std::move(inner), std::move(back), std::move(keep));
  }

  std::unique_ptr<Communicator> inner_;
  Device device_;
};

}  // namespace

std::unique_ptr<Communicator> make_host_staged(std::unique_ptr<Communicator> cpu_comm, Device device) {
  return std::make_unique<HostStagedCommunicator>(std::move(cpu_comm), device);
}

}  // namespace usp

#endif  // USP_HAVE_MPI
