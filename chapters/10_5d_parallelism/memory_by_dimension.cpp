#include "chapters/10_5d_parallelism/memory_by_dimension.hpp"

namespace usp::ch10 {

std::vector<DimensionMemory> memory_by_dimension() {
  calc::TrainingSetup base;
  base.model = ModelConfig::builtin("playbook-8.86b");
  base.seq = 4096;
  base.mbs = 1;
  base.precision = calc::Precision::mixed;
  std::vector<DimensionMemory> out = {{"none", 1, calc::memory_per_rank(base)}};
  for (std::int64_t n : {2, 4, 8}) {
    for (int zero = 1; zero <= 3; ++zero) {
      calc::TrainingSetup s = base;
      s.dp = n, s.zero = zero;
      out.push_back({"ZeRO-" + std::to_string(zero), n, calc::memory_per_rank(s)});
    }
    calc::TrainingSetup tp = base, pp = base, cp = base;
    tp.tp = n, tp.sp = true;
    pp.pp = n;
    cp.cp = n;
    out.push_back({"TP+SP", n, calc::memory_per_rank(tp)});
    out.push_back({"PP", n, calc::memory_per_rank(pp)});
    out.push_back({"CP", n, calc::memory_per_rank(cp)});
  }
  // One 3D layout of 8 GPUs: DP 2 (ZeRO-1) × TP 2 (+SP) × PP 2.
  calc::TrainingSetup d3 = base;
  d3.dp = 2, d3.zero = 1, d3.tp = 2, d3.sp = true, d3.pp = 2;
  out.push_back({"DP·TP·PP", 8, calc::memory_per_rank(d3)});
  return out;
}

report::Table memory_by_dimension_table(const std::vector<DimensionMemory>& rows) {
  report::Table t({{.key = "dimension"}, {.key = "degree"}, {.key = "parameters"}, {.key = "gradients"},
                   {.key = "optimizer"}, {.key = "activations"}, {.key = "total"}});
  for (const DimensionMemory& r : rows)
    t.add({r.dimension, r.degree, r.bytes.parameters, r.bytes.gradients, r.bytes.optimizer, r.bytes.activations,
           r.bytes.total()});
  return t;
}

}  // namespace usp::ch10
