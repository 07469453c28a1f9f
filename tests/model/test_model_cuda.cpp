// The model on a GPU trains as it does on the CPU: the same initial weights (the counter-based
// init is device-independent), the same batches, forward, backward and AdamW on CUDA tensors,
// the losses and the final weights compared step by step with the CPU run. Every recomputation
// mode; f32 and bf16. Skipped cleanly without a CUDA device.
//
// Tolerances. f32: the two runs differ only in summation order (cuBLAS vs OpenBLAS, block
// reductions vs lanes) and expf vs exp_approx, a few fp32 ulps per op, which AdamW's normalised
// steps keep from growing over three steps: 1e-5 of the loss, 1e-4 of the weights' magnitude.
// bf16: wherever an fp32 result straddles a bf16 rounding boundary the two runs store values one
// bf16 step (2^-8 to 2^-7 of the value) apart; the loss averages many such values: 2^-9 of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/data/synthetic_corpus.hpp"
#include "common/device.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"

using namespace usp;

namespace {

struct Run {
  std::vector<double> losses;
  std::vector<float> weights;  // after the last step, as fp32
};

Run train(Device device, DType dtype, Recompute recompute) {
  const ModelConfig cfg = ModelConfig::builtin("usp-tiny");
  const SyntheticCorpus data(7);
  ParamStore params(cfg, dtype, device);
  params.init(3);
  Model model(params, {recompute, dtype});
  AdamWConfig hc;
  hc.lr = 3e-3;
  AdamW opt(params, hc);
  Run r;
  for (std::int64_t step = 0; step < 3; ++step) {
    const Batch b = data.batch(step, 0, 3, 37);  // T = 37: no tile of anything divides it
    params.zero_grad();
    r.losses.push_back(model.forward(b.inputs, b.targets));
    model.backward();
    opt.step(params);
  }
  r.weights = params.flat().to_floats();
  return r;
}

}  // namespace

TEST_CASE("the model on CUDA trains as on the CPU, every recomputation mode, f32 and bf16", "[model][gpu]") {
  if (cuda_device_count() == 0) {
    SUCCEED("no CUDA device");
    return;
  }
  for (DType dt : {DType::f32, DType::bf16})
    for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
      INFO(dtype_name(dt) << ", recompute " << static_cast<int>(rc));
      const Run cpu = train(Device::cpu(), dt, rc), gpu = train(Device::cuda(0), dt, rc);
      const double loss_tol = dt == DType::f32 ? 1e-5 : std::ldexp(1.0, -9);
      for (std::size_t s = 0; s < cpu.losses.size(); ++s) {
        INFO("step " << s << ": cpu " << cpu.losses[s] << ", cuda " << gpu.losses[s]);
        CHECK(std::fabs(gpu.losses[s] - cpu.losses[s]) <= loss_tol * cpu.losses[s]);
      }
      if (dt == DType::f32) {
        double scale = 0, worst = 0;
        for (float w : cpu.weights) scale = std::max(scale, static_cast<double>(std::fabs(w)));
        for (std::size_t i = 0; i < cpu.weights.size(); ++i)
          worst = std::max(worst, static_cast<double>(std::fabs(gpu.weights[i] - cpu.weights[i])));
        CHECK(worst <= 1e-4 * scale);
      }
    }
}
