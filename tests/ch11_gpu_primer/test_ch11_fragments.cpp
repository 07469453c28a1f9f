// The m16n8k16 bf16 fragment table (kernels/tensor_core/m16n8k16.hpp) that matmul rung 08 and
// attention rung 05 load their operands by, and the CPU's version of the instruction
// (host_warp.hpp) that the attention rung's emulation runs on.
//   - rows copied from the PTX ISA's figures for mma.m16n8k16 (lanes 0, 5, 31): the functions say
//     what the hardware says;
//   - the forward maps (lane, register → element) and the inverse ones (element → lane, register)
//     agree on every element of A, B and C;
//   - a 16×16 by 16×8 product loaded through the forward maps, multiplied by 32 host threads, and
//     read back through the C map equals the plain product (exact: bf16 products are exact in fp32
//     and the integers chosen keep every sum exact).
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>

#include "common/float_formats.hpp"
#include "kernels/tensor_core/host_warp.hpp"
#include "kernels/tensor_core/m16n8k16.hpp"

using namespace usp;
using namespace usp::mma;

TEST_CASE("m16n8k16 fragments: the PTX ISA's rows", "[ch11]") {
  // lane 0: groupID 0, threadID_in_group 0
  CHECK((a_row(0, 0) == 0 && a_col(0, 0, 0) == 0 && a_col(0, 0, 1) == 1));
  CHECK((a_row(0, 1) == 8 && a_col(0, 1, 0) == 0));
  CHECK((a_row(0, 2) == 0 && a_col(0, 2, 0) == 8));
  CHECK((a_row(0, 3) == 8 && a_col(0, 3, 1) == 9));
  // lane 5: groupID 1, threadID_in_group 1 -> a0,a1 at row 1 cols 2,3; b0,b1 at k 2,3 col 1
  CHECK((a_row(5, 0) == 1 && a_col(5, 0, 0) == 2 && a_col(5, 0, 1) == 3));
  CHECK((a_row(5, 3) == 9 && a_col(5, 3, 0) == 10 && a_col(5, 3, 1) == 11));
  CHECK((b_n(5) == 1 && b_k(5, 0, 0) == 2 && b_k(5, 0, 1) == 3 && b_k(5, 1, 0) == 10));
  CHECK((c_row(5, 0) == 1 && c_col(5, 0) == 2 && c_col(5, 1) == 3 && c_row(5, 2) == 9));
  // lane 31: groupID 7, threadID_in_group 3
  CHECK((a_row(31, 3) == 15 && a_col(31, 3, 1) == 15));
  CHECK((b_n(31) == 7 && b_k(31, 1, 1) == 15));
  CHECK((c_row(31, 3) == 15 && c_col(31, 3) == 7));
}

TEST_CASE("m16n8k16 fragments: forward and inverse maps agree on every element", "[ch11]") {
  std::set<std::pair<int, int>> a_seen, b_seen, c_seen;
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) {
        const int row = a_row(lane, r), k = a_col(lane, r, h);
        const Slot s = a_slot(row, k);
        INFO("A lane " << lane << " reg " << r << " half " << h << " -> (" << row << ", " << k << ")");
        CHECK((s.lane == lane && s.reg == r && s.h == h));
        a_seen.insert({row, k});
      }
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) {
        const Slot s = b_slot(b_k(lane, r, h), b_n(lane));
        INFO("B lane " << lane << " reg " << r << " half " << h);
        CHECK((s.lane == lane && s.reg == r && s.h == h));
        b_seen.insert({b_k(lane, r, h), b_n(lane)});
      }
    for (int v = 0; v < 4; ++v) {
      const Slot s = c_slot(c_row(lane, v), c_col(lane, v));
      INFO("C lane " << lane << " value " << v);
      CHECK((s.lane == lane && s.reg == v));
      c_seen.insert({c_row(lane, v), c_col(lane, v)});
    }
  }
  CHECK(a_seen.size() == 16u * 16u);  // every element of A, B and C held exactly once
  CHECK(b_seen.size() == 16u * 8u);
  CHECK(c_seen.size() == 16u * 8u);
}

TEST_CASE("m16n8k16 on the CPU: 32 host lanes multiply like the plain product", "[ch11]") {
  float A[16][16], B[16][8], C[16][8], want[16][8];
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) A[i][k] = static_cast<float>((i * 7 + k * 3) % 11 - 5);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = static_cast<float>((k * 5 + n * 9) % 13 - 6);
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      C[i][n] = static_cast<float>(i - n);
      want[i][n] = C[i][n];
      for (int k = 0; k < 16; ++k) want[i][n] += A[i][k] * B[k][n];
    }
  float got[16][8] = {};
  run_host_block(32, [&](int t, HostLane& lane) {
    std::uint32_t a[4], b[2];
    float d[4];
    for (int r = 0; r < 4; ++r)
      a[r] = pack(float_to_bf16(A[a_row(t, r)][a_col(t, r, 0)]), float_to_bf16(A[a_row(t, r)][a_col(t, r, 1)]));
    for (int r = 0; r < 2; ++r)
      b[r] = pack(float_to_bf16(B[b_k(t, r, 0)][b_n(t)]), float_to_bf16(B[b_k(t, r, 1)][b_n(t)]));
    for (int v = 0; v < 4; ++v) d[v] = C[c_row(t, v)][c_col(t, v)];
    lane.mma(d, a, b);
    for (int v = 0; v < 4; ++v) got[c_row(t, v)][c_col(t, v)] = d[v];  // each element written by one lane
  });
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      INFO("D(" << i << ", " << n << ")");
      CHECK(got[i][n] == want[i][n]);
    }
}

TEST_CASE("host warp shuffles: xor 1 and 2 reach the lanes that share a fragment row", "[ch11]") {
  float got[32] = {};
  run_host_block(64, [&](int t, HostLane& lane) {
    const float x = lane.shfl_xor(static_cast<float>(t), 1);
    const float y = lane.shfl_xor(x, 2);
    if (t < 32) got[t] = y;
  });
  for (int t = 0; t < 32; ++t) {
    INFO("lane " << t);
    CHECK(got[t] == static_cast<float>(t ^ 3));
  }
}
