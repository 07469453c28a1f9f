// The host-staged backend: collectives over CUDA tensors carried out by a CPU (MPI)
// communicator on host copies of them. It is what several ranks sharing one GPU use, since NCCL
// refuses two ranks on the same device. It also carries the emulated device's tensors
// (Device::emulated(), common/device.hpp: host memory under another device's name), so a CPU
// run on that device goes through this very code, as ranks sharing a GPU do.
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
    if (inner_->device() != Device::cpu())
      throw Error("make_host_staged: the wrapped communicator must take CPU tensors, '" +
                  inner_->backend() + "' takes " + inner_->device().str());
    if (!device_.is_cuda() && !device_.is_emulated())
      throw Error("make_host_staged: device must be a CUDA device or the emulated one, got " + device_.str());
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return "mpi-host-staged"; }
  Device device() const override { return device_; }
  std::vector<int> world_ranks() const override { return inner_->world_ranks(); }

 private:
  using Pairs = std::vector<std::pair<Tensor, Tensor>>;

  // Arguments were checked, and bytes counted, by Communicator's public ops; the wrapped
  // communicator checks and counts its host copies again on its own stats().
  WorkHandle do_broadcast(Tensor& t, int root) override {
    const bool is_root = rank() == root;
    Tensor h = stage(t, /*copy_in=*/is_root);  // only the root's contents matter
    auto inner = inner_->broadcast_async(h, root);
    return finish_later(std::move(inner), is_root ? Pairs{} : Pairs{{t, h}}, {h});
  }

  WorkHandle do_reduce(Tensor& t, int root, ReduceOp op) override {
    Tensor h = stage(t, true);
    auto inner = inner_->reduce_async(h, root, op);
    // Only the root receives the result; the others' tensors stay as they were.
    return finish_later(std::move(inner), rank() == root ? Pairs{{t, h}} : Pairs{}, {h});
  }

  WorkHandle do_all_reduce(Tensor& t, ReduceOp op) override {
    Tensor h = stage(t, true);
    auto inner = inner_->all_reduce_async(h, op);
    return finish_later(std::move(inner), {{t, h}}, {h});
  }

  WorkHandle do_gather(const Tensor& in, Tensor& out, int root) override {
    const bool is_root = rank() == root;
    Tensor hin = stage(in, true);
    Tensor hout = is_root ? stage(out, false) : Tensor();  // only the root's output is written
    auto inner = inner_->gather_async(hin, hout, root);
    return finish_later(std::move(inner), is_root ? Pairs{{out, hout}} : Pairs{}, {hin, hout});
  }

  WorkHandle do_all_gather(const Tensor& in, Tensor& out) override {
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_gather_async(hin, hout);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle do_scatter(const Tensor& in, Tensor& out, int root) override {
    const bool is_root = rank() == root;
    Tensor hin = is_root ? stage(in, true) : Tensor();  // only the root's input is read
    Tensor hout = stage(out, false);
    auto inner = inner_->scatter_async(hin, hout, root);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle do_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->reduce_scatter_async(hin, hout, op);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle do_all_to_all(const Tensor& in, Tensor& out) override {
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_to_all_async(hin, hout);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle do_all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, Tensor& out,
                            const std::vector<std::int64_t>& recv_counts) override {
    Tensor hin = stage(in, true);
    Tensor hout = stage(out, false);
    auto inner = inner_->all_to_allv_async(hin, send_counts, hout, recv_counts);
    return finish_later(std::move(inner), {{out, hout}}, {hin, hout});
  }

  WorkHandle do_send(const Tensor& t, int dst, int tag) override {
    Tensor h = stage(t, true);
    auto inner = inner_->send_async(h, dst, tag);
    return finish_later(std::move(inner), {}, {h});
  }

  WorkHandle do_recv(Tensor& t, int src, int tag) override {
    Tensor h = stage(t, false);
    auto inner = inner_->recv_async(h, src, tag);
    return finish_later(std::move(inner), {{t, h}}, {h});
  }

  WorkHandle do_barrier() override { return inner_->barrier_async(); }  // nothing to stage

  // The same split of the CPU ranks, staged onto the same device.
  std::unique_ptr<Communicator> do_split(int color, int key) override {
    return make_host_staged(inner_->split(color, key), device_);
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
