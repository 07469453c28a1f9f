// The model's linear layers in FP8, emulated on the CPU: every matmul of the attention and MLP
// blocks reads its operands quantised and dequantised (fp8 codes times scales), computes in fp32
// — what an FP8 tensor-core GEMM with fp32 accumulation computes, up to the order of the sums:
//   forward   y  = Q_e4m3(x) · Q_e4m3(w)ᵀ
//   backward  dx = Q_e5m2(dy) · Q_e4m3(w),  dw += Q_e5m2(dy)ᵀ · Q_e4m3(x)
// e4m3 for what the forward reads (resolution), e5m2 for gradients (range). The embedding, the
// norms, attention's softmax, the LM head and the loss stay in fp32, as in DeepSeek-V3.
// It plugs in through the decoder's LinearHook interface (the hook around every linear
// block): an UnsplitLinears (no split) whose linear blocks quantise.
//
// Scaling recipes (Q above):
//   direct      no scale: values cast as they are (the "naive" FP8: gradients of 1e-6 flush to
//               zero in e5m2, activations beyond 448 saturate in e4m3)
//   per_tensor  one scale per tensor, amax / max_finite
//   tiled       one scale per 1 × 128 tile of activations and gradients, per 128 × 128 block of
//               weights (exercise 14.2's quantize_tiles)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/linear_hook.hpp"
#include "common/train/step_lines.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch14 {

enum class Fp8Scaling { direct, per_tensor, tiled };
const char* scaling_name(Fp8Scaling s);  // "fp8 direct", "fp8 per-tensor", "fp8 tiled"

// What quantisation did to the values it saw: of the nonzero inputs, how many came back as zero.
struct QuantStats {
  std::int64_t nonzero = 0, flushed = 0;
  double flushed_fraction() const { return nonzero ? static_cast<double>(flushed) / static_cast<double>(nonzero) : 0.0; }
};

class Fp8Linears final : public UnsplitLinears {
 public:
  // head_rows: the LM head's output rows (the vocabulary): a column block with a weight of that
  // many rows is the head, kept in fp32.
  Fp8Linears(Fp8Scaling scaling, std::int64_t head_rows) : scaling_(scaling), head_rows_(head_rows) {}

  void column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) override;
  void column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                       std::vector<Tensor>& dw, Tensor& dx) override;
  void row_forward(const Tensor& x, const Tensor& w, Tensor& y) override;
  void row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) override;

  const QuantStats& activations() const { return act_; }
  const QuantStats& weights() const { return weight_; }
  const QuantStats& gradients() const { return grad_; }

 private:
  enum class Kind { activation, weight, gradient };
  Tensor quantized(const Tensor& t, Kind kind);  // Q(t): the dequantised fp32 copy (Temporary)
  bool is_head(const Tensor& w) const { return w.dim(0) == head_rows_; }

  Fp8Scaling scaling_;
  std::int64_t head_rows_;
  QuantStats act_, weight_, grad_;
};

struct Fp8Run {
  std::string recipe;
  std::vector<double> losses;
  QuantStats activations, weights, gradients;  // over the whole run
};

// cfg.model (fp32) trained cfg.steps steps with its linear blocks in FP8 under `scaling`.
// Each step's progress line through `lines`, labelled with the scaling.
Fp8Run train_fp8(Fp8Scaling scaling, const TrainingConfig& cfg, const Dataset& data, const StepLines& lines = {});

}  // namespace usp::ch14
