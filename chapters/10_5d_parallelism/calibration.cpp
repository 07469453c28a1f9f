#include "chapters/10_5d_parallelism/calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

namespace usp::plan {

namespace {

// Nelder-Mead's simplex search, minimising f over R^n from x0 (steps of 0.3 along each axis to
// start; reflection 1, expansion 2, contraction 1/2, shrink 1/2; stops when the simplex's values
// agree to 1e-12 or after 4000 iterations).
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> x(n + 1, x0);
  for (std::size_t i = 0; i < n; ++i) x[i + 1][i] += 0.3;
  std::vector<double> y(n + 1);
  for (std::size_t i = 0; i <= n; ++i) y[i] = f(x[i]);
  auto along = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> p(n);
    for (std::size_t k = 0; k < n; ++k) p[k] = from[k] + t * (to[k] - from[k]);
    return p;
  };
  for (int it = 0; it < 4000; ++it) {
    std::vector<std::size_t> order(n + 1);
    for (std::size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return y[a] < y[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (std::fabs(y[worst] - y[best]) <= 1e-12 * (1 + std::fabs(y[best]))) break;
    std::vector<double> centre(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t k = 0; k < n; ++k) centre[k] += x[i][k] / static_cast<double>(n);
    const std::vector<double> r = along(centre, x[worst], -1.0);
    const double fr = f(r);
    if (fr < y[best]) {
      const std::vector<double> e = along(centre, x[worst], -2.0);
      const double fe = f(e);
      x[worst] = fe < fr ? e : r, y[worst] = std::min(fe, fr);
    } else if (fr < y[second]) {
      x[worst] = r, y[worst] = fr;
    } else {
      const std::vector<double> c = along(centre, x[worst], 0.5);
      const double fc = f(c);
      if (fc < y[worst]) {
        x[worst] = c, y[worst] = fc;
      } else {
        for (std::size_t i = 0; i <= n; ++i)
          if (i != best) x[i] = along(x[best], x[i], 0.5), y[i] = f(x[i]);
      }
    }
  }
  return x[static_cast<std::size_t>(std::min_element(y.begin(), y.end()) - y.begin())];
}

// The fitted constants from the search's coordinates: efficiencies and α as logarithms, the
// overlap as it is (outside [0, 1] the objective refuses it).
StepFit from_coordinates(const std::vector<double>& x, ModelTerms terms) {
  StepFit fit;
  fit.compute_efficiency = std::exp(x[0]);
  fit.bandwidth_efficiency = std::exp(x[1]);
  fit.overlap = x[2];
  fit.latency = terms == ModelTerms::after ? std::exp(x[3]) : 0.0;
  return fit;
}

}  // namespace

const std::vector<MeasuredPoint>& playbook_dp_series() {
  static const std::vector<MeasuredPoint> series = {{8, 2, 16, 0.392},  {16, 1, 16, 0.367}, {32, 1, 8, 0.345},
                                                    {64, 1, 4, 0.304},  {128, 2, 1, 0.258}, {256, 1, 1, 0.153}};
  return series;
}

PlanLayout dp_series_layout(const MeasuredPoint& p) {
  PlanLayout l;
  l.setup.model = ModelConfig::builtin("playbook-1.34b");
  l.setup.seq = 4096;
  l.setup.dp = p.dp;
  l.setup.mbs = p.mbs;
  l.gas = p.gas;
  return l;
}

double predicted_mfu(const MeasuredPoint& p, const Cluster& cluster, const StepFit& fit, ModelTerms terms) {
  Cluster seen = cluster;
  if (terms == ModelTerms::before) seen.hbm_bytes_per_second = 0;
  return mfu(dp_series_layout(p), seen, fit);
}

StepFit fit_step_model(const std::vector<MeasuredPoint>& points, const Cluster& cluster, ModelTerms terms) {
  const StepFit shipped;
  std::vector<double> x0 = {std::log(shipped.compute_efficiency), std::log(shipped.bandwidth_efficiency), shipped.overlap};
  if (terms == ModelTerms::after) x0.push_back(std::log(std::max(shipped.latency, 1e-7)));
  const auto objective = [&](const std::vector<double>& x) {
    const StepFit fit = from_coordinates(x, terms);
    if (fit.overlap < 0 || fit.overlap > 1 || fit.compute_efficiency > 1 || fit.bandwidth_efficiency > 1)
      return std::numeric_limits<double>::max();
    double sum = 0;
    for (const MeasuredPoint& p : points) {
      const double e = (predicted_mfu(p, cluster, fit, terms) - p.mfu) / p.mfu;
      sum += e * e;
    }
    return sum;
  };
  return from_coordinates(nelder_mead(objective, x0), terms);
}

std::vector<double> leave_one_out(const std::vector<MeasuredPoint>& points, const Cluster& cluster, ModelTerms terms) {
  std::vector<double> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<MeasuredPoint> others = points;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(predicted_mfu(points[i], cluster, fit_step_model(others, cluster, terms), terms));
  }
  return out;
}

}  // namespace usp::plan
