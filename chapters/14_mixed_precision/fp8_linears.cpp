#include "chapters/14_mixed_precision/fp8_linears.hpp"

#include <vector>

#include "chapters/14_mixed_precision/fp8_tiles.hpp"
#include "chapters/14_mixed_precision/precision_training.hpp"
#include "common/dtype.hpp"
#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch14 {

constexpr EnumNames<Fp8Scaling, 3> kScalingNames{{{{Fp8Scaling::direct, "fp8 direct"},
                                                   {Fp8Scaling::per_tensor, "fp8 per-tensor"},
                                                   {Fp8Scaling::tiled, "fp8 tiled"}}}};
const char* scaling_name(Fp8Scaling s) { return kScalingNames.name(s); }

Tensor Fp8Linears::quantized(const Tensor& t, Kind kind) {
  USP_CHECK(t.dtype() == DType::f32 && t.device().is_cpu(), "Fp8Linears: the FP8 emulation runs on f32 CPU tensors");
  const std::int64_t cols = t.dim(-1), rows = t.numel() / cols;
  const DType format = kind == Kind::gradient ? DType::e5m2 : DType::e4m3;
  TileGrid grid{rows, cols, rows, cols};  // per tensor: one tile
  if (scaling_ == Fp8Scaling::tiled) {
    grid.tile_rows = kind == Kind::weight ? 128 : 1;
    grid.tile_cols = 128;
  }
  std::vector<std::uint8_t> q(static_cast<std::size_t>(t.numel()));
  std::vector<float> scales(static_cast<std::size_t>(grid.tiles()), 1.0f);
  const float* x = t.data<float>();
  if (scaling_ == Fp8Scaling::direct)
    convert_from_float(x, format, q.data(), q.size());  // the core's codec, values as they are
  else
    quantize_tiles(x, grid, format, q.data(), scales.data());
  Tensor out = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary);
  float* y = out.data<float>();
  dequantize_tiles(q.data(), scales.data(), grid, format, y);
  QuantStats& st = kind == Kind::activation ? act_ : kind == Kind::weight ? weight_ : grad_;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (x[i] != 0.0f) {
      ++st.nonzero;
      if (y[i] == 0.0f) ++st.flushed;
    }
  return out;
}

void Fp8Linears::column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) {
  if (w.size() == 1 && is_head(w[0])) return UnsplitLinears::column_forward(x, w, y);
  const Tensor xq = quantized(x, Kind::activation);
  for (std::size_t i = 0; i < w.size(); ++i) ops::matmul_forward(xq, quantized(w[i], Kind::weight), y[i]);
}

void Fp8Linears::column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                                 std::vector<Tensor>& dw, Tensor& dx) {
  if (w.size() == 1 && is_head(w[0])) return UnsplitLinears::column_backward(dy, x, w, dw, dx);
  const Tensor xq = quantized(x, Kind::activation);
  for (std::size_t i = w.size(); i-- > 0;)
    ops::matmul_backward(quantized(dy[i], Kind::gradient), xq, quantized(w[i], Kind::weight), dx, dw[i],
                         /*accumulate_dx=*/i + 1 != w.size());
}

void Fp8Linears::row_forward(const Tensor& x, const Tensor& w, Tensor& y) {
  ops::matmul_forward(quantized(x, Kind::activation), quantized(w, Kind::weight), y);
}

void Fp8Linears::row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) {
  ops::matmul_backward(quantized(dy, Kind::gradient), quantized(x, Kind::activation), quantized(w, Kind::weight), dx,
                       dw);
}

Fp8Run train_fp8(Fp8Scaling scaling, const TrainingConfig& cfg, const Dataset& data, const StepLines& lines) {
  Fp8Linears linears(scaling, cfg.model.vocab);
  // The fp32 recipe (weights, activations and AdamW states in fp32) with its linear blocks in FP8.
  PrecisionRun run = train_recipe(Recipe::fp32, cfg, data, {}, lines, &linears, scaling_name(scaling));
  return {run.recipe, std::move(run.losses), linears.activations(), linears.weights(), linears.gradients()};
}

}  // namespace usp::ch14
