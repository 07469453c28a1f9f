#include "chapters/08_pipeline_parallel/weight_grad_queue.hpp"

#include <string>

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch08 {

namespace {

std::string key_str(WeightGradQueue::Key k) {
  return "(micro-batch " + std::to_string(k.first) + ", chunk " + std::to_string(k.second) + ")";
}

}  // namespace

void WeightGradQueue::begin(Key key) {
  USP_CHECK(!open_, "WeightGradQueue::begin: " + key_str(open_key_) + " is still open");
  USP_CHECK(queued_.count(key) == 0, "WeightGradQueue::begin: " + key_str(key) + " already has queued work");
  open_ = true;
  open_key_ = key;
  queued_[key];  // a B with no linear layer still needs its W
}

void WeightGradQueue::end() {
  USP_CHECK(open_, "WeightGradQueue::end without begin");
  open_ = false;
}

void WeightGradQueue::run(Key key) {
  const auto found = queued_.find(key);
  USP_CHECK(found != queued_.end(), "WeightGradQueue::run: no input-gradient pass queued work for " + key_str(key));
  Tensor no_dx;
  for (Product& p : found->second) {
    if (p.then) p.then();  // the gradients before it are final: the model's report
    else ops::matmul_backward(p.dy, p.x, p.w, no_dx, p.dw);
  }
  queued_.erase(found);
}

void WeightGradQueue::after_weight_grads(std::function<void()> then) {
  if (!open_) return then();
  Product report;  // no product: the report, at this point of the queue
  report.then = std::move(then);
  queued_[open_key_].push_back(std::move(report));
}

void WeightGradQueue::weight_grad(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dw) {
  if (!open_) {
    Tensor no_dx;
    ops::matmul_backward(dy, x, w, no_dx, dw);
    return;
  }
  // x is a saved activation the model drops after B: holding the handle keeps it alive (and
  // counted by the tracker) until W. dy may be a buffer the model goes on writing: copied.
  queued_[open_key_].push_back({dy.clone(MemCategory::Activation), x, w, dw});
}

void WeightGradQueue::column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                                      std::vector<Tensor>& dw, Tensor& dx) {
  USP_CHECK(dy.size() == w.size() && dw.size() == w.size(), "WeightGradQueue::column_backward: one dy and dw per w");
  // UnsplitLinears' order (the last weight first, overwriting dx), so dx is the same bit for bit.
  for (std::size_t i = w.size(); i-- > 0;) {
    Tensor no_dw;
    ops::matmul_backward(dy[i], x, w[i], dx, no_dw, /*accumulate_dx=*/i + 1 != w.size());
    weight_grad(dy[i], x, w[i], dw[i]);
  }
}

void WeightGradQueue::row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) {
  Tensor no_dw;
  ops::matmul_backward(dy, x, w, dx, no_dw);
  weight_grad(dy, x, w, dw);
}

}  // namespace usp::ch08
