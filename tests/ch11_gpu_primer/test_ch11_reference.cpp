// Chapter 11: the CPU reference (OpenBLAS sgemm, or the triple loop without BLAS) against the
// definition, the tolerance every rung is held to, the element-wise check (NaN and Inf never
// pass) and the launchers' shared preconditions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "kernels/matmul/gemm.hpp"
#include "kernels/matmul/reference.hpp"
#include "chapters/11_gpu_primer/problem_data.hpp"

using namespace usp;
using namespace usp::matmul;
using usp::ch11::HostProblem;

namespace {

struct Shape {
  int M, N, K;
};
// Not multiples of anything: 1, primes, one past and one short of powers of two.
const std::vector<Shape> kShapes = {{1, 1, 1}, {7, 5, 3}, {33, 65, 17}, {100, 37, 129}, {64, 1, 255}, {1, 130, 31}};

std::vector<float> run_cpu(const HostProblem& p, bool triple_loop) {
  std::vector<float> c = p.C0;
  const GemmF32 g{p.M, p.N, p.K, p.alpha, p.beta, p.A.data(), p.B.data(), c.data()};
  triple_loop ? matmul_triple_loop(g) : matmul_cpu(g);
  return c;
}

}  // namespace

TEST_CASE("the CPU reference equals the triple loop bit for bit on exactly representable data", "[ch11]") {
  INFO("CPU reference: " << (matmul_cpu_uses_blas() ? "OpenBLAS sgemm" : "triple loop"));
  for (const Shape s : kShapes)
    for (const auto& [alpha, beta] : std::vector<std::pair<float, float>>{{1, 0}, {2, -0.5f}, {-0.25f, 1}}) {
      INFO(s.M << "×" << s.N << "×" << s.K << ", alpha " << alpha << ", beta " << beta);
      const HostProblem p = ch11::exact_problem(s.M, s.N, s.K, alpha, beta);
      CHECK(run_cpu(p, false) == run_cpu(p, true));
    }
}

TEST_CASE("the CPU reference is within the fp32 tolerance of the triple loop on random data", "[ch11]") {
  for (const Shape s : kShapes) {
    INFO(s.M << "×" << s.N << "×" << s.K);
    const HostProblem p = ch11::random_problem(s.M, s.N, s.K, 1.5f, -0.75f, 3);
    const ExpectedC e = expected_gemm(p.M, p.N, p.K, p.alpha, p.beta, p.A, p.B, p.C0, Accumulation::fp32);
    // The triple loop (double accumulation) is the near-exact value: the reference must be
    // within its own rounding bound of it, which is half of γ.
    CHECK(e.value == run_cpu(p, false));
    const Verdict v = check_result(run_cpu(p, true), e);
    INFO(v.message);
    CHECK(v.ok);
    CHECK(v.worst_ratio <= 0.5);
  }
}

TEST_CASE("with beta = 0, C is not read: NaN in C does not reach the result", "[ch11]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostProblem p = ch11::exact_problem(9, 11, 13, 2.0f, 0.0f);
  const std::vector<float> clean = run_cpu(p, true);
  p.C0.assign(p.C0.size(), nan);
  CHECK(run_cpu(p, false) == clean);
  CHECK(run_cpu(p, true) == clean);
}

TEST_CASE("K = 0 leaves beta·C (an empty sum)", "[ch11]") {
  std::vector<float> a, b, c = {1, 2, 3, 4};
  matmul_cpu({2, 2, 0, 1.0f, 0.5f, a.data(), b.data(), c.data()});
  CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
}

TEST_CASE("the tolerance is γ·(|alpha|·|A||B| + |beta|·|C0|) with γ = (r_kernel + 1)·(K + 2)·2^-24", "[ch11]") {
  CHECK(gemm_gamma(1024, Accumulation::fp32) == 2.0 * 1026 * std::ldexp(1.0, -24));
  CHECK(gemm_gamma(1024, Accumulation::tensor_core) == 3.0 * 1026 * std::ldexp(1.0, -24));
  // A 1×1 problem: A = [-2], B = [3], C0 = [5], alpha = 0.5, beta = -1: |alpha|·6 + |beta|·5 = 8.
  const ExpectedC e = expected_gemm(1, 1, 1, 0.5f, -1.0f, {-2}, {3}, {5}, Accumulation::fp32);
  CHECK(e.value == std::vector<float>{-8});
  CHECK(e.tolerance[0] == Approx(8 * gemm_gamma(1, Accumulation::fp32)).epsilon(1e-6));
}

TEST_CASE("the element-wise check: NaN and Inf never pass, and a wrong element is named", "[ch11]") {
  ExpectedC e;
  e.M = 2;
  e.N = 3;
  e.value = {1, 2, 3, 4, 5, 6};
  e.tolerance.assign(6, 1e30f);  // however generous
  CHECK(check_result({1, 2, 3, 4, 5, 6}, e).ok);
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    const Verdict v = check_result({1, 2, 3, 4, bad, 6}, e);
    CHECK_FALSE(v.ok);
    CHECK(v.wrong == 1);
    CHECK(v.message.find("(1, 1)") != std::string::npos);
  }
  e.tolerance.assign(6, 0.01f);
  const Verdict off = check_result({1, 2, 3.02f, 4, 5, 6}, e);
  CHECK_FALSE(off.ok);
  CHECK(off.message.find("first at (0, 2)") != std::string::npos);
  CHECK(off.max_abs_err == Approx(0.02).epsilon(1e-4));
  CHECK(check_result({1, 2, 3.005f, 4, 5, 6}, e).ok);
  CHECK_THROWS_AS(check_result({1, 2, 3}, e), Error);
}

TEST_CASE("launcher preconditions: check_gemm names the rung and the broken condition", "[ch11]") {
  alignas(16) float buf[8] = {};
  const GemmF32 ok{2, 2, 2, 1.0f, 0.0f, buf, buf, buf};
  CHECK_NOTHROW(check_gemm(ok, "rung", 32));
  GemmF32 g = ok;
  g.M = 0;
  CHECK_THROWS_WITH(check_gemm(g, "rung", 32), Catch::Contains("rung: M, N and K must be >= 1"));
  g = ok;
  g.B = nullptr;
  CHECK_THROWS_WITH(check_gemm(g, "rung", 32), Catch::Contains("must not be null"));
  g = ok;
  g.M = 70000, g.K = 1;
  CHECK_THROWS_WITH(check_gemm(g, "rung", 1), Catch::Contains("65535"));
  CHECK_NOTHROW(check_gemm(g, "cuBLAS", 0));  // no grid of its own
  g = ok;
  g.M = 1 << 16, g.N = 1 << 16;
  CHECK_THROWS_WITH(check_gemm(g, "rung", 128), Catch::Contains("2^31"));
  g = ok;
  g.A = buf + 1;  // 4-byte aligned, not 16
  CHECK_NOTHROW(check_gemm(g, "rung", 32));
  CHECK_THROWS_WITH(check_gemm(g, "rung", 32, 16), Catch::Contains("16-byte aligned"));
}
