#include "chapters/12_flash_attention/equivalence.hpp"

#include <algorithm>
#include <cmath>

#include "common/numeric_compare.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"

namespace usp::ch12 {

namespace {

constexpr std::int64_t kB = 2, kT = 37, kH = 4, kG = 2, kD = 20;

Tensor random(const Shape& shape, const char* name, DType dtype) {
  return Tensor::from_floats(rng::normal_values(11, name, shape_numel(shape)), shape, dtype);
}

double gap(const Tensor& a, const Tensor& b) { return max_abs_diff(a.to_floats(), b.to_floats()); }

}  // namespace

double Equivalence::largest() const { return std::max({out, lse, dq, dk, dv}); }

std::vector<Equivalence> check_equivalence(FlashTiles tiles) {
  std::vector<Equivalence> rows;
  for (DType dt : {DType::f32, DType::bf16})
    for (bool causal : {true, false}) {
      Equivalence e{std::string(causal ? "causal " : "full ") + dtype_name(dt), dt, causal};
      const Shape qs{kB, kT, kH, kD}, ks{kB, kT, kG, kD};
      const Tensor q = random(qs, "q", dt), k = random(ks, "k", dt), v = random(ks, "v", dt);
      const Tensor dout = random(qs, "dout", dt);
      // The lse (and, without the mask, the whole reference): one block over the whole sequence,
      // positions 0..T-1 for the queries and, for the keys, the same (causal) or all 0 (every key
      // visible). Causal outputs and gradients: the naive attention the model uses, which keeps P.
      Tensor q_pos = Tensor::empty({kT}, DType::i32), k_pos = Tensor::empty({kT}, DType::i32);
      for (std::int64_t i = 0; i < kT; ++i) {
        q_pos.data<std::int32_t>()[i] = static_cast<std::int32_t>(i);
        k_pos.data<std::int32_t>()[i] = causal ? static_cast<std::int32_t>(i) : 0;
      }
      Tensor ro = Tensor::empty(qs, dt), rl = Tensor::empty({kB, kH, kT}), rdq = Tensor::zeros(qs, dt);
      Tensor rdk = Tensor::zeros(ks, dt), rdv = Tensor::zeros(ks, dt);
      ops::attention_block_forward(q, k, v, q_pos, k_pos, ro, rl);
      if (causal) {
        Tensor probs = Tensor::empty({kB, kH, kT, kT}, dt);
        ops::attention_forward(q, k, v, ro, probs);
        ops::attention_backward(dout, q, k, v, probs, rdq, rdk, rdv);
      } else {
        ops::attention_block_backward(dout, Tensor(), q, k, v, q_pos, k_pos, ro, rl, rdq, rdk, rdv);
      }
      Tensor fo = Tensor::empty(qs, dt), fl = Tensor::empty({kB, kH, kT}), fdq = Tensor::empty(qs, dt);
      Tensor fdk = Tensor::empty(ks, dt), fdv = Tensor::empty(ks, dt);
      flash_attention_forward(q, k, v, causal, tiles, fo, fl);
      flash_attention_backward(dout, q, k, v, fo, fl, causal, tiles, fdq, fdk, fdv);
      e.out = gap(fo, ro), e.lse = gap(fl, rl), e.dq = gap(fdq, rdq), e.dk = gap(fdk, rdk), e.dv = gap(fdv, rdv);
      for (const Tensor* t : {&ro, &rdq, &rdk, &rdv})
        for (float x : t->to_floats()) e.magnitude = std::max(e.magnitude, static_cast<double>(std::fabs(x)));
      rows.push_back(e);
    }
  return rows;
}

}  // namespace usp::ch12
