// The control-divergence demonstration (divergence_demo.hpp).
#include "chapters/11_gpu_primer/divergence_demo.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/cuda_support.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"
#include "common/report/median.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#include "chapters/11_gpu_primer/event_timer.hpp"
#include "kernels/divergence/branch_work.hpp"
#include "kernels/divergence/divergence_kernels.hpp"

namespace usp::ch11 {

std::vector<DivergenceRow> run_divergence(std::int64_t n, int iters, int warmup, int timed, int device,
                                          std::ostream& out) {
  using namespace usp::divergence;
  const Device dev = Device::cuda(device);
  std::vector<float> x(static_cast<std::size_t>(n));
  const rng::Key key = rng::make_key(0, rng::hash_name("ch11.divergence.x"));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = rng::uniform(key, static_cast<std::uint64_t>(i));
  std::vector<float> expected(x.size());
  for (std::int64_t e = 0; e < n; ++e)
    expected[static_cast<std::size_t>(e)] = branch_work(e, x[static_cast<std::size_t>(e)], iters);

  const Tensor x_dev = Tensor::from_floats(x, {n}).to(dev, MemCategory::Temporary);
  Tensor y_dev = Tensor::zeros({n}, DType::f32, MemCategory::Temporary, dev);
  const float* xp = x_dev.data<float>();
  float* yp = y_dev.data<float>();

  out << "== control divergence: " << n << " elements, " << iters
      << " steps of one of two branches each (even elements: branch A, odd: branch B) ==\n";
  std::vector<DivergenceRow> rows;
  for (const bool uniform : {false, true}) {
    DivergenceRow row;
    row.arrangement = uniform ? "uniform" : "divergent";
    row.n = n;
    row.iters = iters;
    const auto launch = [&] { uniform ? run_uniform(xp, yp, n, iters) : run_divergent(xp, yp, n, iters); };
    y_dev.zero();
    launch();
    cuda::synchronize();
    const std::vector<float> got = y_dev.to_floats();
    bool ok = true;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err = std::fabs(static_cast<double>(got[i]) - expected[i]);
      if (!std::isfinite(got[i]) || !(err <= branch_tolerance(iters))) ok = false;  // NaN fails
      if (std::isfinite(got[i]) && err > row.max_abs_err) row.max_abs_err = err;
    }
    row.verified = ok;
    row.time_ms = report::median(time_launches(launch, warmup, timed));
    rows.push_back(row);
    char line[200];
    std::snprintf(line, sizeof line, "  %-10s %10.4f ms   max |err| %.2e  %s\n", row.arrangement.c_str(), row.time_ms,
                  row.max_abs_err, ok ? "ok" : "WRONG");
    out << line;
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "  divergent / uniform = %.2f (a warp whose lanes disagree runs both branches, one after the other)\n\n",
                rows[0].time_ms / rows[1].time_ms);
  out << line << std::flush;
  return rows;
}

void write_divergence_csv(const std::string& path, const std::vector<DivergenceRow>& rows) {
  std::ostringstream f;
  f << "arrangement,n,iters,time_ms,max_abs_err,verified\n";
  for (const DivergenceRow& r : rows)
    f << r.arrangement << ',' << r.n << ',' << r.iters << ',' << r.time_ms << ',' << r.max_abs_err << ','
      << (r.verified ? 1 : 0) << '\n';
  write_file_atomic(path, f.str());
}

}  // namespace usp::ch11
