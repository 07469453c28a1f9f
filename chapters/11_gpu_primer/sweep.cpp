// The matmul sweep (sweep.hpp).
#include "chapters/11_gpu_primer/sweep.hpp"

#include <cstdio>
#include <sstream>
#include <iomanip>
#include <map>

#include "common/cuda_support.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"
#include "common/report/median.hpp"
#include "common/tensor.hpp"
#include "chapters/11_gpu_primer/event_timer.hpp"
#include "kernels/matmul/reference.hpp"
#include "chapters/11_gpu_primer/ladder.hpp"
#include "chapters/11_gpu_primer/problem_data.hpp"

namespace usp::ch11 {
namespace {

using matmul::ExpectedC;
using matmul::GemmBf16;
using matmul::GemmF32;

// One size's inputs on the GPU, in both precisions, and what each precision must produce.
struct DeviceProblem {
  HostProblem host;
  Tensor A, B, C, A16, B16, C0;  // C0: the initial C, kept on the host to reset C from
  ExpectedC expect_f32, expect_bf16;
};

DeviceProblem prepare(int size, const SweepConfig& config, Device dev) {
  DeviceProblem p;
  p.host = random_problem(size, size, size, config.alpha, config.beta, config.seed);
  const HostProblem& h = p.host;
  const std::int64_t mk = static_cast<std::int64_t>(h.M) * h.K, kn = static_cast<std::int64_t>(h.K) * h.N,
                     mn = static_cast<std::int64_t>(h.M) * h.N;
  p.A = Tensor::from_floats(h.A, {mk}).to(dev, MemCategory::Temporary);
  p.B = Tensor::from_floats(h.B, {kn}).to(dev, MemCategory::Temporary);
  p.A16 = Tensor::from_floats(h.A, {mk}, DType::bf16).to(dev, MemCategory::Temporary);
  p.B16 = Tensor::from_floats(h.B, {kn}, DType::bf16).to(dev, MemCategory::Temporary);
  p.C0 = Tensor::from_floats(h.C0, {mn});
  p.C = p.C0.to(dev, MemCategory::Temporary);
  p.expect_f32 = matmul::expected_gemm(h.M, h.N, h.K, h.alpha, h.beta, h.A, h.B, h.C0, matmul::Accumulation::fp32);
  // The bf16 rungs see bf16-rounded A and B: their reference is computed from exactly those.
  p.expect_bf16 = matmul::expected_gemm(h.M, h.N, h.K, h.alpha, h.beta, rounded_to_bf16(h.A), rounded_to_bf16(h.B),
                                        h.C0, matmul::Accumulation::tensor_core);
  return p;
}

// The launch of rung r on problem p, as a callable.
std::function<void()> launcher(const Rung& r, DeviceProblem& p) {
  const HostProblem& h = p.host;
  if (r.precision == Precision::f32) {
    if (!r.run_f32) throw Error(r.name + ": no launcher in this build");
    const GemmF32 g{h.M, h.N, h.K, h.alpha, h.beta, p.A.data<float>(), p.B.data<float>(), p.C.data<float>()};
    return [run = r.run_f32, g] { run(g); };
  }
  if (!r.run_bf16) throw Error(r.name + ": no launcher in this build");
  const GemmBf16 g{h.M, h.N, h.K, h.alpha, h.beta, p.A16.data<std::uint16_t>(), p.B16.data<std::uint16_t>(),
                   p.C.data<float>()};
  return [run = r.run_bf16, g] { run(g); };
}

SweepRow measure(const Rung& r, DeviceProblem& p, const SweepConfig& config) {
  const HostProblem& h = p.host;
  SweepRow row;
  row.kernel = r.name;
  row.precision = precision_name(r.precision);
  row.M = h.M, row.N = h.N, row.K = h.K;
  const std::function<void()> launch = launcher(r, p);

  // 1. Check: one run from the known C0, every element against the reference.
  p.C.copy_from(p.C0);
  launch();
  cuda::synchronize();
  const Tensor got = p.C.to(Device::cpu(), MemCategory::Temporary);
  const float* values = got.data<float>();
  const matmul::Verdict v = matmul::check_result(std::vector<float>(values, values + got.numel()),
                                                 r.precision == Precision::f32 ? p.expect_f32 : p.expect_bf16);
  row.verified = v.ok;
  row.max_abs_err = v.max_abs_err;
  row.worst_ratio = v.worst_ratio;
  row.check = v.message;

  // 2. Time: C keeps being overwritten (alpha·A·B + beta·C, again and again); only the time counts now.
  row.time_ms = report::median(time_launches(launch, config.warmup, config.iters));
  row.gflops = matmul::gemm_flops(h.M, h.N, h.K) / (row.time_ms * 1e-3) / 1e9;
  return row;
}

void print_size_header(const HostProblem& h, std::ostream& out) {
  out << "== " << h.M << " × " << h.N << " × " << h.K << "  (C = " << h.alpha << "·A·B + " << h.beta
      << "·C; every element checked) ==\n"
      << "  kernel                 prec   time (ms)    GFLOP/s   % cuBLAS   max |err|   err/tol  check\n";
}

void print_row(const SweepRow& r, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-22s %-5s %10.4f %10.1f %9.1f%% %11.2e %9.3f  %s\n", r.kernel.c_str(),
                r.precision.c_str(), r.time_ms, r.gflops, r.pct_of_cublas, r.max_abs_err, r.worst_ratio,
                r.verified ? "ok" : "WRONG");
  out << line;
  if (!r.verified) out << "      " << r.check << "\n";
}

}  // namespace

std::vector<SweepRow> run_sweep(const SweepConfig& config, std::ostream& out) {
  const Device dev = Device::cuda(config.device);
  std::vector<const Rung*> chosen;
  for (const std::string& name : config.kernels) {
    const Rung& r = find_rung(name);
    if (!r.baseline) chosen.push_back(&r);
  }
  // The baselines run first at each size: the rungs' % of cuBLAS needs them.
  const Rung& base_f32 = baseline_for(Precision::f32);
  const Rung& base_bf16 = baseline_for(Precision::bf16);

  std::vector<SweepRow> rows;
  for (int size : config.sizes) {
    DeviceProblem p = prepare(size, config, dev);
    print_size_header(p.host, out);
    std::map<std::string, double> baseline_gflops;
    std::vector<SweepRow> here;
    for (const Rung* r : {&base_f32, &base_bf16}) {
      here.push_back(measure(*r, p, config));
      baseline_gflops[here.back().precision] = here.back().gflops;
    }
    for (const Rung* r : chosen) {
      try {
        here.push_back(measure(*r, p, config));
      } catch (const NotImplemented& e) {  // an exercise stub (bin/exercises/ch11_gpu_primer): said, not fatal
        out << "  " << r->name << ": skipped, " << e.what() << "\n";
      }
    }
    for (SweepRow& row : here) {
      row.pct_of_cublas = 100.0 * row.gflops / baseline_gflops[row.precision];
      print_row(row, out);
    }
    out << "\n" << std::flush;
    rows.insert(rows.end(), here.begin(), here.end());
  }
  return rows;
}

void write_kernels_csv(const std::string& path, const std::vector<SweepRow>& rows) {
  std::ostringstream f;
  f << "kernel,M,N,K,time_ms,gflops,pct_of_cublas,max_abs_err,precision,worst_err_over_tol,verified\n";
  f << std::setprecision(9);
  for (const SweepRow& r : rows)
    f << r.kernel << ',' << r.M << ',' << r.N << ',' << r.K << ',' << r.time_ms << ',' << r.gflops << ','
      << r.pct_of_cublas << ',' << r.max_abs_err << ',' << r.precision << ',' << r.worst_ratio << ','
      << (r.verified ? 1 : 0) << '\n';
  write_file_atomic(path, f.str());
}

}  // namespace usp::ch11
