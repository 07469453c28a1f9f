#include "common/model/moe.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "common/checked_math.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp {

namespace {

// Row i of a 2-D tensor (any dtype) copied to row j of another of the same dtype and width.
void copy_row(const Tensor& src, std::int64_t i, Tensor& dst, std::int64_t j) {
  const std::size_t bytes = static_cast<std::size_t>(src.dim(1)) * dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + static_cast<std::size_t>(j) * bytes,
              static_cast<const char*>(src.raw()) + static_cast<std::size_t>(i) * bytes, bytes);
}

Tensor as_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor out = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary);
  convert_to_float(t.dtype(), t.raw(), out.data<float>(), static_cast<std::size_t>(t.numel()));
  return out;
}

// The routing's decisions and the per-token sums are host code (N·E and N·K·C numbers against
// the experts' N·K·C·F products on the device): on a GPU they read host copies.
Tensor host(const Tensor& t) { return on_device(t, Device::cpu()); }

// Where a result is formed on the host: dst itself on the CPU, a host Temporary like it on a GPU
// (then store_into copies it over).
Tensor host_target(const Tensor& dst) {
  return dst.device().is_cpu() ? dst : Tensor::empty(dst.shape(), dst.dtype(), MemCategory::Temporary);
}
void store_into(const Tensor& formed, Tensor& dst) {
  if (!formed.shares_storage_with(dst)) dst.copy_from(formed);
}

// Rows of each local expert at the experts (expert-major): [E/ep].
std::vector<std::int64_t> rows_per_local_expert(const ExpertRoute& r, std::int64_t local) {
  std::vector<std::int64_t> n(static_cast<std::size_t>(local), 0);
  for (std::size_t b = 0; b < r.recv_by_expert.size(); ++b) n[b % static_cast<std::size_t>(local)] += r.recv_by_expert[b];
  return n;
}

}  // namespace

std::int64_t MoeSaved::bytes() const {
  std::int64_t n = 0;
  for (const Tensor* t : {&probs, &choice, &weight, &row, &x, &g, &u, &z, &y})
    if (t->defined()) n += static_cast<std::int64_t>(t->nbytes());
  return n;
}

namespace {

// Routing, on the host: logits [N, E] f32 -> s.probs (softmax), s.choice and s.weight (top-k, the
// weights renormalised over the k), s.routing's counts and the load-balancing loss E · Σ f_i · P_i.
void route(const Tensor& logits, std::int64_t K, MemCategory cat, MoeSaved& s) {
  const std::int64_t N = logits.dim(0), E = logits.dim(1);
  s.probs = Tensor::empty({N, E}, DType::f32, cat);
  s.choice = Tensor::empty({N, K}, DType::i32, cat);
  s.weight = Tensor::empty({N, K}, DType::f32, cat);
  s.row = Tensor::empty({N, K}, DType::i32, cat);
  const float* lg = logits.data<float>();
  float* p = s.probs.data<float>();
  std::int32_t* choice = s.choice.data<std::int32_t>();
  float* weight = s.weight.data<float>();
  MoeRouting& r = s.routing;
  r.routed.assign(static_cast<std::size_t>(E), 0);
  std::vector<std::int32_t> order(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < N; ++t) {
    const float* l = lg + t * E;
    float* pt = p + t * E;
    const float mx = *std::max_element(l, l + E);
    float sum = 0;
    for (std::int64_t e = 0; e < E; ++e) sum += pt[e] = std::exp(l[e] - mx);
    for (std::int64_t e = 0; e < E; ++e) pt[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](std::int32_t a, std::int32_t b) { return pt[a] > pt[b] || (pt[a] == pt[b] && a < b); });
    float top = 0;
    for (std::int64_t j = 0; j < K; ++j) top += pt[order[static_cast<std::size_t>(j)]];
    for (std::int64_t j = 0; j < K; ++j) {
      const std::int32_t e = order[static_cast<std::size_t>(j)];
      choice[t * K + j] = e;
      weight[t * K + j] = pt[e] / top;
      ++r.routed[static_cast<std::size_t>(e)];
    }
  }
  r.aux = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    double P = 0;
    for (std::int64_t t = 0; t < N; ++t) P += p[t * E + e];
    r.aux += static_cast<double>(r.routed[static_cast<std::size_t>(e)]) / N * (P / N);
  }
  r.aux *= static_cast<double>(E);
}

// Which assignments an expert keeps, and where its rows start among the dispatched rows.
struct Capacity {
  std::vector<std::int64_t> slot;   // [N·k] the assignment's position within its expert, -1 if dropped
  std::vector<std::int64_t> first;  // [E] the expert's first row
  std::int64_t rows = 0;            // R: the assignments kept
};

// Capacity: keep assignments in token order until their expert is full (dropless: keep all);
// fills s.routing's kept, dropped and the fingerprint of the decisions.
Capacity apply_capacity(const ModelConfig& c, std::int64_t N, std::int64_t K, MoeSaved& s) {
  const std::int64_t E = c.experts;
  const std::int32_t* choice = s.choice.data<std::int32_t>();
  MoeRouting& r = s.routing;
  const std::int64_t cap =
      c.capacity_factor > 0
          ? std::min(N * K, checked_ceil(c.capacity_factor * static_cast<double>(N * K) / E, "the expert capacity"))
          : N * K;
  Capacity out;
  r.kept.assign(static_cast<std::size_t>(E), 0);
  out.slot.assign(static_cast<std::size_t>(N * K), -1);
  for (std::int64_t a = 0; a < N * K; ++a) {
    const auto e = static_cast<std::size_t>(choice[a]);
    if (r.kept[e] < cap) out.slot[static_cast<std::size_t>(a)] = r.kept[e]++;
  }
  r.dropped = N * K - std::accumulate(r.kept.begin(), r.kept.end(), std::int64_t{0});
  r.decisions = 1469598103934665603ull;
  for (std::int64_t a = 0; a < N * K; ++a)
    for (std::int64_t v : {std::int64_t{choice[a]}, out.slot[static_cast<std::size_t>(a)] < 0 ? std::int64_t{-1} : std::int64_t{1}})
      r.decisions = (r.decisions ^ static_cast<std::uint64_t>(v + 2)) * 1099511628211ull;
  out.first.assign(static_cast<std::size_t>(E), 0);
  for (std::int64_t e = 1; e < E; ++e) out.first[static_cast<std::size_t>(e)] = out.first[e - 1] + r.kept[e - 1];
  out.rows = N * K - r.dropped;
  return out;
}

// The dispatched rows grouped by expert (rows [R, C], host) and s.row, each assignment's row.
void gather_rows(const Tensor& h, const Capacity& cap, std::int64_t K, MoeSaved& s, Tensor& rows) {
  const std::int32_t* choice = s.choice.data<std::int32_t>();
  std::int32_t* row = s.row.data<std::int32_t>();
  const Tensor hh = host(h);
  for (std::int64_t a = 0; a < h.dim(0) * K; ++a) {
    const std::int64_t pos = cap.slot[static_cast<std::size_t>(a)];
    row[a] = pos < 0 ? -1 : static_cast<std::int32_t>(cap.first[static_cast<std::size_t>(choice[a])] + pos);
    if (pos >= 0) copy_row(hh, a / K, rows, row[a]);
  }
}

// Each local expert's SwiGLU MLP on its rows of s.x: s.g, s.u, s.z kept, outputs into results.
void run_experts(const MoeWeights& w, const std::vector<std::int64_t>& n_of, MoeSaved& s, Tensor& results) {
  for (std::int64_t j = 0, at = 0; j < static_cast<std::int64_t>(n_of.size()); at += n_of[static_cast<std::size_t>(j)], ++j) {
    const std::int64_t n = n_of[static_cast<std::size_t>(j)];
    if (n == 0) continue;
    const auto J = static_cast<std::size_t>(j);
    Tensor xj = s.x.slice(at, at + n), gj = s.g.slice(at, at + n), uj = s.u.slice(at, at + n), zj = s.z.slice(at, at + n);
    Tensor yj = results.slice(at, at + n);
    ops::matmul_forward(xj, w.w1[J], gj);
    ops::matmul_forward(xj, w.w3[J], uj);
    ops::swiglu_forward(gj, uj, zj);
    ops::matmul_forward(zj, w.w2[J], yj);
  }
}

// out [N, C] = per token, the weighted sum of its kept assignments' expert outputs s.y, on the host.
void weighted_sum(const MoeSaved& s, std::int64_t K, Tensor& out) {
  const std::int64_t N = out.dim(0), C = out.dim(1);
  const std::int32_t* row = s.row.data<std::int32_t>();
  const float* weight = s.weight.data<float>();
  const Tensor y32 = as_f32(host(s.y));
  Tensor o32 = Tensor::zeros({N, C}, DType::f32, MemCategory::Temporary);
  float* o = o32.data<float>();
  for (std::int64_t a = 0; a < N * K; ++a) {
    if (row[a] < 0) continue;
    const float* yr = y32.data<float>() + static_cast<std::int64_t>(row[a]) * C;
    float* ot = o + (a / K) * C;
    for (std::int64_t i = 0; i < C; ++i) ot[i] += weight[a] * yr[i];
  }
  Tensor formed = host_target(out);
  if (out.dtype() == DType::f32) formed.copy_from(o32);
  else convert_from_float(o, out.dtype(), formed.raw(), static_cast<std::size_t>(out.numel()));
  store_into(formed, out);
}

}  // namespace

void moe_forward(const ModelConfig& c, ExpertParallel& ep, const MoeWeights& w, const Tensor& h, bool keep,
                 Tensor& out, MoeSaved& s) {
  const std::int64_t N = h.dim(0), C = h.dim(1), E = c.experts, K = c.experts_per_token, F = c.ffn;
  const MemCategory cat = keep ? MemCategory::Activation : MemCategory::Temporary;
  const DType adt = h.dtype();
  const Device dev = h.device();  // the experts' work runs there; the routing on the host

  // ---- routing: logits -> softmax -> top-k with renormalised weights, the aux loss ------------
  Tensor logits = Tensor::empty({N, E}, DType::f32, MemCategory::Temporary, dev);
  ops::matmul_forward(h, w.router, logits);
  logits = host(logits);
  route(logits, K, cat, s);

  // ---- capacity: keep assignments in token order until their expert is full -----------------
  const Capacity cap = apply_capacity(c, N, K, s);

  // ---- dispatch: rows grouped by expert, to the experts' ranks ------------------------------
  Tensor rows = Tensor::empty({cap.rows, C}, adt, MemCategory::Temporary);
  gather_rows(h, cap, K, s, rows);
  rows = on_device(rows, dev);
  s.route = ep.route(s.routing.kept);
  const std::int64_t R_in = std::accumulate(s.route.recv_counts.begin(), s.route.recv_counts.end(), std::int64_t{0});
  Tensor received = Tensor::empty({R_in, C}, adt, cat, dev);  // the experts' input: kept as s.x
  ep.to_experts(s.route, rows, received);
  rows = Tensor();

  // ---- the experts, each on its rows --------------------------------------------------------
  s.x = received;  // grouped by local expert
  received = Tensor();
  s.g = Tensor::empty({R_in, F}, adt, cat, dev);
  s.u = Tensor::empty({R_in, F}, adt, cat, dev);
  s.z = Tensor::empty({R_in, F}, adt, cat, dev);
  Tensor results = Tensor::empty({R_in, C}, adt, MemCategory::Temporary, dev);
  run_experts(w, rows_per_local_expert(s.route, E / ep.size()), s, results);

  // ---- combine: back to this rank, the weighted sum per token -------------------------------
  s.y = Tensor::empty({cap.rows, C}, adt, cat, dev);
  ep.from_experts(s.route, results, s.y);
  results = Tensor();
  weighted_sum(s, K, out);
  if (!keep) {
    const MoeRouting routing = s.routing;
    s = MoeSaved{};
    s.routing = routing;
  }
}

namespace {

Tensor host_f32(Shape shape) { return Tensor::empty(shape, DType::f32, MemCategory::Temporary); }

// Combine backward, on the host, from dout [N, C] f32 (host): dw [N·k] (each assignment's weight
// gradient, dout[t] · Y[row]; 0 if dropped) and drows [R, C] (w · dout[t] for each kept row).
void combine_backward(const MoeSaved& s, std::int64_t K, const Tensor& dout, std::vector<float>& dw, Tensor& drows) {
  const std::int64_t N = dout.dim(0), C = dout.dim(1);
  const float* d = dout.data<float>();
  const std::int32_t* row = s.row.data<std::int32_t>();
  const float* weight = s.weight.data<float>();
  const Tensor y32 = as_f32(host(s.y));
  float* dr = drows.data<float>();
  for (std::int64_t a = 0; a < N * K; ++a) {
    if (row[a] < 0) continue;
    const float* yr = y32.data<float>() + static_cast<std::int64_t>(row[a]) * C;
    const float* dt = d + (a / K) * C;
    float* drr = dr + static_cast<std::int64_t>(row[a]) * C;
    double dot = 0;
    for (std::int64_t i = 0; i < C; ++i) {
      dot += static_cast<double>(dt[i]) * yr[i];
      drr[i] = weight[a] * dt[i];
    }
    dw[static_cast<std::size_t>(a)] = static_cast<float>(dot);
  }
}

// Each local expert's SwiGLU backward on its rows of dres [R', C] (the experts' share of drows):
// dX [R', C] into dx, weight gradients accumulated into w.d_*; releases s.x, s.g, s.u, s.z.
void experts_backward(MoeWeights& w, const std::vector<std::int64_t>& n_of, const Tensor& dres, MoeSaved& s,
                      Tensor& dx) {
  const std::int64_t F = s.g.dim(1);
  auto tmp_dev = [dev = dres.device()](Shape shape) {
    return Tensor::empty(shape, DType::f32, MemCategory::Temporary, dev);
  };
  for (std::int64_t j = 0, at = 0; j < static_cast<std::int64_t>(n_of.size()); at += n_of[static_cast<std::size_t>(j)], ++j) {
    const std::int64_t n = n_of[static_cast<std::size_t>(j)];
    if (n == 0) continue;
    const auto J = static_cast<std::size_t>(j);
    Tensor dz = tmp_dev({n, F}), dg = tmp_dev({n, F}), du = tmp_dev({n, F});
    Tensor dxj = dx.slice(at, at + n);
    ops::matmul_backward(dres.slice(at, at + n), s.z.slice(at, at + n), w.w2[J], dz, w.d_w2[J]);
    ops::swiglu_backward(dz, s.g.slice(at, at + n), s.u.slice(at, at + n), dg, du);
    ops::matmul_backward(du, s.x.slice(at, at + n), w.w3[J], dxj, w.d_w3[J]);
    ops::matmul_backward(dg, s.x.slice(at, at + n), w.w1[J], dxj, w.d_w1[J], /*accumulate_dx=*/true);
  }
  s.x = s.g = s.u = s.z = Tensor();
}

// Back to the tokens, on the host: dh [N, C] = Σ over t's kept rows of dX (dxrows [R, C], host).
void scatter_to_tokens(const MoeSaved& s, std::int64_t K, const Tensor& dxrows, Tensor& dh) {
  const std::int64_t N = dh.dim(0), C = dh.dim(1);
  const std::int32_t* row = s.row.data<std::int32_t>();
  Tensor dh_formed = host_target(dh);
  float* dht = dh_formed.data<float>();
  std::fill(dht, dht + N * C, 0.0f);
  const float* dxr = dxrows.data<float>();
  for (std::int64_t a = 0; a < N * K; ++a) {
    if (row[a] < 0) continue;
    const float* src = dxr + static_cast<std::int64_t>(row[a]) * C;
    float* dst = dht + (a / K) * C;
    for (std::int64_t i = 0; i < C; ++i) dst[i] += src[i];
  }
  store_into(dh_formed, dh);
}

// The router's backward, on the host: the weights' gradient dw [N·k] and the aux loss's
// (aux_scale) -> dlogits [N, E] f32:
//   w_j = p_j / S (S = Σ_topk p): ∂L/∂p_j = (dw_j - Σ_l dw_l·w_l) / S for the top-k;
//   aux = E·Σ_i f_i·P_i, P_i = mean_t p[t, i]: ∂/∂p[t, i] = aux_scale · E · f_i / N;
//   softmax: dlogit = p ⊙ (dp - Σ p·dp).
Tensor router_backward(const MoeSaved& s, std::int64_t K, const std::vector<float>& dw, float aux_scale) {
  const std::int64_t N = s.probs.dim(0), E = s.probs.dim(1);
  const float* p = s.probs.data<float>();
  const std::int32_t* choice = s.choice.data<std::int32_t>();
  const float* weight = s.weight.data<float>();
  Tensor dlogits = host_f32({N, E});
  float* dl = dlogits.data<float>();
  std::vector<float> dp(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < N; ++t) {
    const float* pt = p + t * E;
    for (std::int64_t e = 0; e < E; ++e)
      dp[static_cast<std::size_t>(e)] =
          aux_scale * static_cast<float>(E) * static_cast<float>(s.routing.routed[static_cast<std::size_t>(e)]) /
          static_cast<float>(N) / static_cast<float>(N);
    float S = 0, mean = 0;
    for (std::int64_t j = 0; j < K; ++j) S += pt[choice[t * K + j]];
    for (std::int64_t j = 0; j < K; ++j) mean += dw[static_cast<std::size_t>(t * K + j)] * weight[t * K + j];
    for (std::int64_t j = 0; j < K; ++j)
      dp[static_cast<std::size_t>(choice[t * K + j])] += (dw[static_cast<std::size_t>(t * K + j)] - mean) / S;
    float dot = 0;
    for (std::int64_t e = 0; e < E; ++e) dot += pt[e] * dp[static_cast<std::size_t>(e)];
    for (std::int64_t e = 0; e < E; ++e) dl[t * E + e] = pt[e] * (dp[static_cast<std::size_t>(e)] - dot);
  }
  return dlogits;
}

}  // namespace

void moe_backward(const ModelConfig& c, ExpertParallel& ep, MoeWeights& w, const Tensor& h, const Tensor& dout,
                  float aux_scale, MoeSaved& s, Tensor& dh) {
  const std::int64_t N = h.dim(0), C = h.dim(1), K = c.experts_per_token;
  const std::int64_t R = s.y.dim(0), R_in = s.x.dim(0);
  const Device dev = h.device();
  auto tmp_dev = [dev](Shape shape) { return Tensor::empty(shape, DType::f32, MemCategory::Temporary, dev); };
  const Tensor dout_host = host(dout);

  // ---- combine backward: dw per assignment, w · dout[t] per row -------------------------------
  std::vector<float> dw(static_cast<std::size_t>(N * K), 0.0f);
  Tensor drows = host_f32({R, C});
  combine_backward(s, K, dout_host, dw, drows);
  s.y = Tensor();

  // ---- to the experts, their backward, and back ----------------------------------------------
  const std::vector<std::int64_t> n_of = rows_per_local_expert(s.route, c.experts / ep.size());
  Tensor dres = tmp_dev({R_in, C});
  ep.to_experts(s.route, on_device(drows, dev), dres);
  drows = Tensor();
  Tensor dx = tmp_dev({R_in, C});
  experts_backward(w, n_of, dres, s, dx);
  Tensor dxrows = tmp_dev({R, C});
  ep.from_experts(s.route, dx, dxrows);
  dx = Tensor();
  dxrows = host(dxrows);

  // ---- back to the tokens: dh = Σ over t's kept rows of dX --------------------------------------
  scatter_to_tokens(s, K, dxrows, dh);

  // ---- the router: weights -> probabilities (renormalisation, aux loss) -> logits -----------------
  const Tensor dlogits = router_backward(s, K, dw, aux_scale);
  Tensor dh_router = tmp_dev({N, C});
  ops::matmul_backward(on_device(dlogits, dev), h, w.router, dh_router, w.d_router);
  ops::add_inplace(dh, dh_router);
  s = MoeSaved{};
}

}  // namespace usp
