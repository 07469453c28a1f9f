// WeightGradQueue: the model's backward split in two, as the zero-bubble schedules need it
// (ZB-H1: B = the input gradient, which the previous stage waits for; W = the weight gradient,
// which nobody waits for and which can fill a bubble).
//
// Every linear layer's backward is two independent products:
//   dx = dy · w        (B: needed now, it flows to the layer below and to the previous stage)
//   dw += dyᵀ · x      (W: needed only by the optimizer step)
// This LinearHook (the single-device one, t = 1) runs the first at once and, while a
// micro-batch's B is open (begin / end), queues the second with the tensors it reads: the
// layer's saved input x and a copy of dy (the model reuses the residual stream's gradient
// buffer as it goes down, so dy must be copied). run(key) later performs that micro-batch's
// queued products, in the order B met them, and frees what they held. The products are the ones
// BW computes (each GEMM on the same values), so B + W equals BW bit for bit. The RMSNorm and
// embedding weight gradients stay in B: they are cheap elementwise work, not GEMMs.
// Held between B and W: x and dy of every linear layer of the stage — a micro-batch's
// activations stay alive until its W, which is the memory the zero-bubble paper trades.
// Outside begin / end (a whole BW), the products run at once: the plain model.
// What the model reports ready (after_weight_grads: ModelHooks::grad_ready for a linear weight)
// waits in the same queue behind the products before it, so run(key) reports each weight the
// moment its gradient is computed: the hook's "this gradient is final" holds under the split.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "common/model/linear_hook.hpp"

namespace usp::ch08 {

class WeightGradQueue final : public UnsplitLinears {
 public:
  using Key = std::pair<int, int>;  // (micro-batch, chunk)

  // From here to end(), weight gradients are queued under key instead of computed.
  void begin(Key key);
  void end();
  // Performs and forgets key's queued weight gradients (Error when there are none).
  void run(Key key);
  std::size_t pending() const { return queued_.size(); }  // micro-batches with queued work

  void column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                       std::vector<Tensor>& dw, Tensor& dx) override;
  void row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) override;
  // Between begin and end: `then` is queued behind the products queued so far (run calls it);
  // otherwise it runs at once.
  void after_weight_grads(std::function<void()> then) override;

 private:
  struct Product {
    Tensor dy, x, w, dw;  // dw += dyᵀ · x (w: the weight, for its shape)
    std::function<void()> then = {};  // set: not a product, a report to make at this point
  };
  bool open_ = false;
  Key open_key_{};
  std::map<Key, std::vector<Product>> queued_;

  // dw += dyᵀ·x now, or queued under the open key.
  void weight_grad(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dw);
};

}  // namespace usp::ch08
