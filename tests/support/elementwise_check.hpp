// Element-wise comparison of float sequences for tests. One CHECK per element floods a failure
// with thousands of lines, and CHECK(a == b) on vectors prints two walls of numbers; a bare
// "1.67529f == 0.41882f" says neither where nor on which rank. This names them:
//
//   CHECK(elementwise_mismatch(got, expected, Tolerance::exact(), rank) == "");
//   -> "rank 1, index 7: got 1.67529, expected 0.41882; index 9: ...; 12 of 500 elements differ"
//
// It never aborts, so a test whose ranks meet in collectives after the comparison keeps them in
// step (a REQUIRE on one rank would leave the others waiting in the next collective).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace usp::testing {

// |got - expected| <= abs + rel · |expected|; exact() compares the values with == (NaN never
// matches).
struct Tolerance {
  double abs = 0;
  double rel = 0;
  static Tolerance exact() { return {}; }
  static Tolerance absolute(double a) { return {a, 0}; }
  static Tolerance relative(double r) { return {0, r}; }
};

namespace detail {

// The report for elements failing within(i, got, expected); tol_text describes the bound.
template <class Within>
std::string mismatch_report(const std::vector<float>& got, const std::vector<float>& expected, Within within,
                            const std::string& tol_text, int rank, std::size_t listed) {
  std::ostringstream out;
  out.precision(9);
  if (rank >= 0) out << "rank " << rank << ", ";
  if (got.size() != expected.size()) {
    out << "got " << got.size() << " elements, expected " << expected.size();
    return out.str();
  }
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (within(i, static_cast<double>(got[i]), static_cast<double>(expected[i]))) continue;
    if (differ < listed) out << (differ ? "; " : "") << "index " << i << ": got " << got[i] << ", expected " << expected[i];
    ++differ;
  }
  if (differ == 0) return "";
  out << "; " << differ << " of " << got.size() << " elements differ" << tol_text;
  return out.str();
}

}  // namespace detail

// "" when got matches expected element by element (and in length); otherwise the first
// `listed` mismatches as "rank r, index i: got x, expected y" (the rank left out when rank < 0)
// and how many elements differ in all.
inline std::string elementwise_mismatch(const std::vector<float>& got, const std::vector<float>& expected,
                                        Tolerance tol = Tolerance::exact(), int rank = -1, std::size_t listed = 4) {
  if (tol.abs == 0 && tol.rel == 0)
    return detail::mismatch_report(got, expected, [](std::size_t, double g, double e) { return g == e; }, "", rank,
                                   listed);
  std::ostringstream bound;
  bound << " by more than " << tol.abs << " + " << tol.rel << "·|expected|";
  return detail::mismatch_report(
      got, expected, [&](std::size_t, double g, double e) { return std::fabs(g - e) <= tol.abs + tol.rel * std::fabs(e); },
      bound.str(), rank, listed);
}

// The same with a bound of its own for each element: |got[i] - expected[i]| <= bound[i].
inline std::string elementwise_mismatch(const std::vector<float>& got, const std::vector<float>& expected,
                                        const std::vector<double>& bound, int rank = -1, std::size_t listed = 4) {
  if (bound.size() != expected.size()) return "test error: " + std::to_string(bound.size()) + " bounds for " +
                                              std::to_string(expected.size()) + " elements";
  return detail::mismatch_report(
      got, expected, [&](std::size_t i, double g, double e) { return std::fabs(g - e) <= bound[i]; },
      " by more than their bounds", rank, listed);
}

// The largest |element|: the scale an absolute tolerance is taken relative to.
inline double max_abs(const std::vector<float>& a) {
  double m = 0;
  for (float x : a) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

}  // namespace usp::testing
