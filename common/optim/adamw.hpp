// AdamW (Loshchilov & Hutter) over the flat parameter buffer, with fp32 master weights when
// the parameters are low precision:
//   m = β1·m + (1-β1)·g ;  v = β2·v + (1-β2)·g²
//   w = w - lr·( m/(1-β1^t) / (sqrt(v/(1-β2^t)) + eps) + wd·w )     (no decay on norm weights)
// States m, v (and the master copy for bf16 parameters) are MemCategory::OptimizerState:
// 8 bytes per parameter with fp32 parameters (4N + 4N + 8N in all), 12 with bf16 ones
// (2N + 2N + 4N + 8N, the playbook's mixed-precision count).
// step_range() updates only the elements [begin, end) of the flat buffer, which is what ZeRO
// shards call; the states then cover only that range.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "common/model/params.hpp"
#include "common/tensor.hpp"

namespace usp {

struct AdamWConfig {
  double lr = 3e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  // States for the flat range [begin, end) of params (default: all of it).
  AdamW(const ParamStore& params, AdamWConfig config, std::int64_t begin = 0, std::int64_t end = -1);
  // The same for a store without a flat buffer (per-unit or sharded layouts): `infos` say which
  // elements of [begin, end) get weight decay, `values` [end - begin] holds the range's current
  // parameters (read once, for the fp32 master copy when they are low precision).
  AdamW(const std::vector<ParamInfo>& infos, AdamWConfig config, std::int64_t begin, std::int64_t end,
        const Tensor& values);

  const AdamWConfig& config() const { return config_; }
  std::int64_t step_count() const { return t_; }
  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }

  // One step: reads grads[begin, end) (f32 or bf16; any flat tensor of end-begin elements
  // laid out like the range), writes params[begin, end).
  void step(ParamStore& params);
  void step_range(Tensor params_range, const Tensor& grads_range);

  // State for checkpoints: m, v (and master when present), each [end - begin] f32.
  Tensor& m() { return m_; }
  Tensor& v() { return v_; }
  Tensor& master() { return master_; }  // undefined for f32 parameters
  const Tensor& m() const { return m_; }
  const Tensor& v() const { return v_; }
  const Tensor& master() const { return master_; }
  void set_step_count(std::int64_t t) { t_ = t; }

 private:
  AdamWConfig config_;
  std::int64_t begin_, end_;
  std::int64_t t_ = 0;
  Tensor m_, v_, master_;
  // Flat ranges (within [begin, end)) that get weight decay: every parameter but the norms.
  std::vector<std::pair<std::int64_t, std::int64_t>> decayed_;
};

}  // namespace usp
