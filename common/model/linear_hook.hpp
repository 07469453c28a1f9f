// LinearHook: how the decoder's weight-bearing blocks compute — every linear block, and the two
// vocabulary ends (embedding, loss). The model calls nothing else for them, so a chapter changes
// how they run by giving the model its own LinearHook (ModelOptions::linears): chapter 06 splits
// the weights over a tensor-parallel group (MegatronTp), chapter 08 defers the weight gradients
// (WeightGradQueue), chapter 14 quantises the matmuls (Fp8Linears). The model calls them where
// Megatron-LM places the tensor-parallel split:
//
//   stream x ─ RMSNorm ─▶ column block (q, k, v) ─ attention ─ row block (o) ─▶ + x
//   stream x2 ─ RMSNorm ─▶ column block (gate, up) ─ SwiGLU ─ row block (down) ─▶ + x2
//   tokens ─▶ embedding ─▶ stream        stream ─ RMSNorm ─▶ column block (lm_head) ─▶ loss
//
// A column block multiplies one input by several weights split along their output rows; a row
// block multiplies an input split along its features by a weight split along its columns and
// must sum the t partial results. Around them sit the two conjugate operators: f entering a
// column block (forward: identity, backward: all-reduce) and g leaving a row block (forward:
// all-reduce, backward: identity); with sequence parallelism the stream's rows are split over
// the t ranks too, and f / g become all-gather / reduce-scatter.
//
// Shapes: N = B·T tokens; n = the stream rows this rank holds (stream_rows(N): N, or N/t with
// sequence parallelism); C hidden; a weight's shape is this rank's shard (ParamInfo::shape).
// UnsplitLinears (below) is the model without any split: plain matmuls, the ops' embedding and
// loss; every Model uses it unless ModelOptions::linears names another. t is the group's size
// (1 without a split).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "common/tensor.hpp"

namespace usp {

class LinearHook {
 public:
  virtual ~LinearHook() = default;

  virtual std::int64_t size() const = 0;          // t
  virtual bool sequence_parallel() const = 0;
  // The residual-stream rows this rank holds for n_tokens tokens (UsageError when sequence
  // parallelism cannot split them evenly).
  std::int64_t stream_rows(std::int64_t n_tokens) const;

  // Column block: x [n, C] (the stream rows held), w[i] [out_i, C] -> y[i] [N, out_i] (overwritten).
  virtual void column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) = 0;
  // dy[i] [N, out_i] and the forward's x -> dw[i] += dy[i]ᵀ·f(x); dx [n, C] = the gradient of x
  // (overwritten). Weight gradients are final on return, unless the hook defers them (below).
  virtual void column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                               std::vector<Tensor>& dw, Tensor& dx) = 0;
  // Row block: x [N, in] (this rank's features), w [C, in] -> y [n, C] (overwritten): the sum over
  // the group of x·wᵀ, on the stream rows held.
  virtual void row_forward(const Tensor& x, const Tensor& w, Tensor& y) = 0;
  // dy [n, C] -> dx [N, in] (overwritten), dw += (g's backward of dy)ᵀ·x (final on return, unless
  // the hook defers it).
  virtual void row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) = 0;
  // Runs `then` once every weight gradient of the column_backward / row_backward calls made so far
  // is final: at once for a hook that computes them inside those calls (the default, every hook but
  // one); chapter 08's WeightGradQueue, which defers them from a zero-bubble schedule's B to its W,
  // right after W has computed them. The model reports a linear weight's gradient ready
  // (ModelHooks::grad_ready) through this, so the report is true under either.
  virtual void after_weight_grads(std::function<void()> then) { then(); }

  // Embedding: tokens [N] i32, table [V_r, C] (this rank's vocabulary rows) -> out [n, C].
  virtual void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) = 0;
  // dout [n, C] -> dtable += its rows' share.
  virtual void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) = 0;

  // Cross-entropy: logits [N, V_r] (this rank's vocabulary columns), targets [N] -> the mean loss
  // over the N rows (the same on every rank). `saved` receives what loss_backward needs (left
  // undefined when nothing; an Activation otherwise).
  virtual double loss_forward(const Tensor& logits, const Tensor& targets, Tensor& saved) = 0;
  // dlogits [N, V_r] = scale · ∂(mean loss)/∂logits (overwritten).
  virtual void loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& saved, Tensor& dlogits,
                             float scale) = 0;
};

// The blocks unsplit: t = 1, and every operation is the single-device op. Not final: a
// chapter that changes only how the linear blocks compute (chapter 08's deferred weight
// gradients, chapter 14's FP8 matmuls) derives from it and overrides those.
class UnsplitLinears : public LinearHook {
 public:
  std::int64_t size() const override { return 1; }
  bool sequence_parallel() const override { return false; }
  void column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) override;
  void column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                       std::vector<Tensor>& dw, Tensor& dx) override;
  void row_forward(const Tensor& x, const Tensor& w, Tensor& y) override;
  void row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) override;
  void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) override;
  void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) override;
  double loss_forward(const Tensor& logits, const Tensor& targets, Tensor& saved) override;
  void loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& saved, Tensor& dlogits,
                     float scale) override;
};

}  // namespace usp
