#include "chapters/02_recomputation/recompute_measurement.hpp"

#include <algorithm>
#include <chrono>

#include "common/calc/memory_model.hpp"
#include "common/device.hpp"
#include "common/report/median.hpp"
#include "chapters/02_recomputation/attention_probs.hpp"

namespace usp::ch02 {

ModeResult measure_mode(const TrainingConfig& cfg, Recompute mode, const Batch& batch, int repeats) {
  ModeResult r;
  r.mode = mode;
  ParamStore params(cfg.model, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  Model model(params, {mode, cfg.dtype});
  // On the CPU exercise 02.1 makes every attention probability. It is host code, so on a GPU the
  // model's own CUDA attention makes them (the same keep-or-recompute rules, the same bytes).
  if (cfg.device.is_cpu()) model.set_attention_probs(attention_probs);
  MemoryTracker& tracker = MemoryTracker::instance();
  std::vector<double> times;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    params.zero_grad();
    const std::int64_t base = tracker.current()[MemCategory::Activation];
    const std::int64_t base_total = tracker.current().total();
    tracker.reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    r.loss = model.forward(batch.inputs, batch.targets);
    const std::int64_t held = tracker.current()[MemCategory::Activation] - base;
    model.backward();
    synchronize(cfg.device);  // a GPU's queued backward belongs to the time
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (rep == 0) {
      r.held_after_forward = held;
      r.layer_kept = model.saved_bytes().at(1);
      r.peak_activation = tracker.peak()[MemCategory::Activation] - base;
      r.peak_total = tracker.peak_total() - base_total;
      r.flops = model.flops();
      r.gradients = params.flat_grad().to_floats();
    }
  }
  r.seconds = report::median(times);
  r.layer_formula = calc::course_layer_activation_bytes(cfg.model, batch.inputs.dim(1), batch.inputs.dim(0), mode,
                                                        static_cast<std::int64_t>(dtype_size(cfg.dtype)));
  return r;
}

std::int64_t count_differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return static_cast<std::int64_t>(std::max(a.size(), b.size()));
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace usp::ch02
