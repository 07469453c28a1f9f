// The mixture-of-experts MLP (common/model/moe.hpp): its forward against a per-token reference in
// double written from the definition (softmax, top-k, renormalised weights, each expert's SwiGLU,
// the weighted sum), the capacity's drops counted by hand, the aux loss E·Σ f_i·P_i, the whole MoE
// model's gradients (router, experts, everything upstream) against finite differences, and the
// parameter layout (Mixtral's names, counts, expert-parallel shards, bad configurations refused).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/model/model.hpp"
#include "common/model/moe.hpp"
#include "common/rng.hpp"
#include "tests/model/model_fixtures.hpp"

using namespace usp;
using usp::testing::random_tokens;

namespace {

// 2 layers, 4 experts, top-2, sizes that are not powers of two; init_std 0.3 so that the router's
// probabilities are far apart (routing decisions stable under the finite differences' steps).
ModelConfig moe_config(double capacity_factor = 0) {
  ModelConfig c = testing::small_model({.name = "moe", .vocab = 19, .hidden = 12, .layers = 2, .heads = 2,
                                        .kv_heads = 1, .ffn = 10, .max_seq = 64, .init_std = 0.3});
  c.experts = 4;
  c.experts_per_token = 2;
  c.capacity_factor = capacity_factor;
  c.router_aux_loss_coef = 0.05;
  c.validate();
  return c;
}

std::string moe_name(int layer, const std::string& rest) {
  return "model.layers." + std::to_string(layer) + ".block_sparse_moe." + rest;
}

MoeWeights weights_of(ParamStore& P, int layer) {
  MoeWeights w;
  w.router = P.param(moe_name(layer, "gate.weight"));
  w.d_router = P.grad(moe_name(layer, "gate.weight"));
  for (std::int64_t e = 0; e < P.config().experts; ++e) {
    const std::string ex = "experts." + std::to_string(e) + ".";
    w.w1.push_back(P.param(moe_name(layer, ex + "w1.weight")));
    w.w2.push_back(P.param(moe_name(layer, ex + "w2.weight")));
    w.w3.push_back(P.param(moe_name(layer, ex + "w3.weight")));
    w.d_w1.push_back(P.grad(moe_name(layer, ex + "w1.weight")));
    w.d_w2.push_back(P.grad(moe_name(layer, ex + "w2.weight")));
    w.d_w3.push_back(P.grad(moe_name(layer, ex + "w3.weight")));
  }
  return w;
}

Tensor random_rows(std::int64_t N, std::int64_t C, const std::string& name) {
  Tensor h = Tensor::empty({N, C});
  for (std::int64_t i = 0; i < N * C; ++i)
    h.data<float>()[i] = rng::normal(3, name, static_cast<std::uint64_t>(i));
  return h;
}

// The MoE MLP from its definition, in double: out [N, C], the kept assignments per expert, the
// dropped count and E·Σ f_i·P_i.
struct Reference {
  std::vector<double> out;
  std::vector<std::int64_t> routed, kept;
  std::int64_t dropped = 0;
  double aux = 0;
};

Reference reference_moe(const ModelConfig& c, const MoeWeights& w, const Tensor& h) {
  const std::int64_t N = h.dim(0), C = h.dim(1), E = c.experts, K = c.experts_per_token, F = c.ffn;
  const float* x = h.data<float>();
  auto at = [](const Tensor& t, std::int64_t r, std::int64_t col) {
    return static_cast<double>(t.data<float>()[r * t.dim(1) + col]);
  };
  Reference ref;
  ref.out.assign(static_cast<std::size_t>(N * C), 0.0);
  ref.routed.assign(static_cast<std::size_t>(E), 0);
  ref.kept.assign(static_cast<std::size_t>(E), 0);
  const double cap = c.capacity_factor > 0 ? std::ceil(c.capacity_factor * static_cast<double>(N * K) / E) : 1e300;
  std::vector<double> P(static_cast<std::size_t>(E), 0.0);
  for (std::int64_t t = 0; t < N; ++t) {
    std::vector<double> p(static_cast<std::size_t>(E));
    for (std::int64_t e = 0; e < E; ++e) {
      double l = 0;
      for (std::int64_t i = 0; i < C; ++i) l += at(w.router, e, i) * x[t * C + i];
      p[static_cast<std::size_t>(e)] = l;
    }
    const double mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += v = std::exp(v - mx);
    for (double& v : p) v /= sum;
    for (std::int64_t e = 0; e < E; ++e) P[static_cast<std::size_t>(e)] += p[static_cast<std::size_t>(e)] / N;
    std::vector<int> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double top = 0;
    for (std::int64_t j = 0; j < K; ++j) top += p[static_cast<std::size_t>(order[j])];
    for (std::int64_t j = 0; j < K; ++j) {
      const int e = order[static_cast<std::size_t>(j)];
      ++ref.routed[static_cast<std::size_t>(e)];
      if (ref.kept[static_cast<std::size_t>(e)] >= cap) {
        ++ref.dropped;
        continue;
      }
      ++ref.kept[static_cast<std::size_t>(e)];
      const double weight = p[static_cast<std::size_t>(e)] / top;
      std::vector<double> z(static_cast<std::size_t>(F));
      for (std::int64_t f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (std::int64_t i = 0; i < C; ++i) {
          g += at(w.w1[static_cast<std::size_t>(e)], f, i) * x[t * C + i];
          u += at(w.w3[static_cast<std::size_t>(e)], f, i) * x[t * C + i];
        }
        z[static_cast<std::size_t>(f)] = g / (1 + std::exp(-g)) * u;
      }
      for (std::int64_t i = 0; i < C; ++i) {
        double y = 0;
        for (std::int64_t f = 0; f < F; ++f) y += at(w.w2[static_cast<std::size_t>(e)], i, f) * z[static_cast<std::size_t>(f)];
        ref.out[static_cast<std::size_t>(t * C + i)] += weight * y;
      }
    }
  }
  for (std::int64_t e = 0; e < E; ++e)
    ref.aux += static_cast<double>(ref.routed[static_cast<std::size_t>(e)]) / N * P[static_cast<std::size_t>(e)];
  ref.aux *= static_cast<double>(E);
  return ref;
}

}  // namespace

TEST_CASE("MoE forward = the per-token definition; capacity drops counted by hand; aux = E·Σ f·P", "[model][moe]") {
  for (double cf : {0.0, 1.0, 0.6}) {
    const ModelConfig c = moe_config(cf);
    INFO("capacity factor " << cf << " (0: dropless)");
    ParamStore P(c);
    P.init(5);
    const MoeWeights w = weights_of(P, 1);
    const std::int64_t N = 23;  // N·k / E not an integer: the capacity's ceiling matters
    const Tensor h = random_rows(N, c.hidden, "h");
    const Reference ref = reference_moe(c, w, h);
    SingleDeviceExperts ep;
    Tensor out = Tensor::empty({N, c.hidden});
    MoeSaved saved;
    moe_forward(c, ep, w, h, /*keep=*/true, out, saved);
    // fp32 against double: each output is a sum of k weighted experts, each a few dozen fp32
    // products deep (|values| ≲ 10): 1e-4 absolute is ~100 ulps of the largest, far below the
    // O(0.1) change a wrong expert, weight or dropped row makes.
    for (std::int64_t i = 0; i < N * c.hidden; ++i) {
      INFO("element " << i);
      REQUIRE(std::fabs(out.data<float>()[i] - ref.out[static_cast<std::size_t>(i)]) <= 1e-4);
    }
    CHECK(saved.routing.routed == ref.routed);
    CHECK(saved.routing.kept == ref.kept);
    CHECK(saved.routing.dropped == ref.dropped);
    if (cf == 0) CHECK(ref.dropped == 0);
    if (cf == 0.6) CHECK(ref.dropped > 0);  // cap = ceil(0.6·46/4) = 7 of ~11.5 per expert
    // The aux loss from fp32 probabilities against double ones: ~1e-7 relative.
    CHECK(std::fabs(saved.routing.aux - ref.aux) <= 1e-6 * ref.aux);
    // Σ_i f_i = k; with equal load the loss would be k exactly.
    CHECK(std::accumulate(ref.routed.begin(), ref.routed.end(), std::int64_t{0}) == N * c.experts_per_token);
  }
}

TEST_CASE("MoE model gradients match finite differences of CE + aux (router, experts, all upstream)",
          "[model][moe]") {
  for (double cf : {0.0, 0.6}) {
    const ModelConfig c = moe_config(cf);
    INFO("capacity factor " << cf);
    const Tensor in = random_tokens(2, 5, c.vocab, 1, "inputs");
    const Tensor tgt = random_tokens(2, 5, c.vocab, 1, "targets");
    ParamStore params(c);
    params.init(7);
    Model model(params);
    model.forward(in, tgt);
    model.backward();
    const std::vector<float> grad = params.flat_grad().to_floats();
    auto routing_now = [&] { return model.routing(); };
    model.evaluate(in, tgt);
    const std::vector<MoeRouting> base = routing_now();
    auto same_routing = [&](const std::vector<MoeRouting>& r) {
      for (std::size_t l = 0; l < r.size(); ++l)
        if (r[l].decisions != base[l].decisions) return false;
      return true;
    };
    // The objective is piecewise smooth: top-k and capacity switch at ties. The fourth-order
    // stencil (as for the dense model, test_model_gradients.cpp: noise ≲ 1.5e-4) is valid where
    // no evaluation changes a routing decision; an element whose stencil does is skipped
    // (counted, and at most a few percent of them).
    const float step = 1e-2f;
    std::int64_t checked = 0, skipped = 0;
    for (const ParamInfo& p : params.infos()) {
      Tensor wt = params.param(p.name);
      float* data = wt.data<float>();
      for (std::int64_t j = 0; j < p.numel; ++j) {
        const float saved = data[j];
        bool stable = true;
        auto objective_at = [&](float delta) {
          data[j] = saved + delta;
          const double l = model.evaluate(in, tgt) + model.aux_loss();
          stable = stable && same_routing(model.routing());
          data[j] = saved;
          return l;
        };
        const double fd = (8.0 * (objective_at(step) - objective_at(-step)) -
                           (objective_at(2 * step) - objective_at(-2 * step))) / (12.0 * step);
        if (!stable) {
          ++skipped;
          continue;
        }
        ++checked;
        const double g = grad[static_cast<std::size_t>(p.offset + j)];
        INFO(p.name << "[" << j << "]: backward " << g << ", finite difference " << fd);
        REQUIRE(std::fabs(fd - g) <= 1.5e-4 + 2e-3 * std::fabs(g));
      }
    }
    INFO(checked << " elements checked, " << skipped << " skipped (a routing decision changed)");
    CHECK(skipped * 20 <= checked);
  }
}

TEST_CASE("MoE layer backward: dh and the weight gradients against finite differences of Σ r·out", "[model][moe]") {
  const ModelConfig c = moe_config(0.6);
  ParamStore P(c);
  P.init(5);
  MoeWeights w = weights_of(P, 0);
  const std::int64_t N = 9;
  Tensor h = random_rows(N, c.hidden, "h");
  const Tensor r = random_rows(N, c.hidden, "r");
  SingleDeviceExperts ep;
  std::vector<std::int32_t> base_rows;  // each assignment's expert and row: the routing decisions
  bool stable = true;
  auto decisions = [&](const MoeSaved& s) {
    std::vector<std::int32_t> d(s.choice.data<std::int32_t>(), s.choice.data<std::int32_t>() + s.choice.numel());
    d.insert(d.end(), s.row.data<std::int32_t>(), s.row.data<std::int32_t>() + s.row.numel());
    return d;
  };
  auto objective = [&] {
    Tensor out = Tensor::empty({N, c.hidden});
    MoeSaved s;
    moe_forward(c, ep, w, h, true, out, s);
    stable = stable && decisions(s) == base_rows;
    double v = 0;
    for (std::int64_t i = 0; i < N * c.hidden; ++i) v += static_cast<double>(r.data<float>()[i]) * out.data<float>()[i];
    return v;
  };
  Tensor out = Tensor::empty({N, c.hidden});
  MoeSaved s;
  moe_forward(c, ep, w, h, true, out, s);
  base_rows = decisions(s);
  Tensor dh = Tensor::empty({N, c.hidden});
  moe_backward(c, ep, w, h, r, 0.0f, s, dh);
  // The same stencil as the model's; fp32 forward of a dozen-deep sum: noise ≲ 1e-3 here, where
  // the objective Σ r·out is O(10). Elements whose stencil crosses a routing decision are skipped.
  const float step = 1e-2f;
  std::int64_t checked = 0, skipped = 0;
  auto check = [&](Tensor t, const Tensor& g, const std::string& what) {
    float* data = t.data<float>();
    for (std::int64_t j = 0; j < t.numel(); ++j) {
      const float saved = data[j];
      auto at = [&](float d) { data[j] = saved + d; const double v = objective(); data[j] = saved; return v; };
      stable = true;
      const double fd = (8.0 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12.0 * step);
      if (!stable) {
        ++skipped;
        continue;
      }
      ++checked;
      INFO(what << "[" << j << "]: backward " << g.data<float>()[j] << ", finite difference " << fd);
      CHECK(std::fabs(fd - g.data<float>()[j]) <= 1e-3 + 2e-3 * std::fabs(fd));
    }
  };
  check(h, dh, "h");
  check(w.router, w.d_router, "router");
  check(w.w1[0], w.d_w1[0], "w1[0]");
  check(w.w2[1], w.d_w2[1], "w2[1]");
  check(w.w3[2], w.d_w3[2], "w3[2]");
  INFO(checked << " elements checked, " << skipped << " skipped");
  CHECK(skipped * 20 <= checked);
}

TEST_CASE("MoE parameters: Mixtral's names and shapes, the counts, expert-parallel shards, bad shapes refused",
          "[model][moe]") {
  const ModelConfig c = moe_config();
  const std::vector<ParamInfo> all = llama_param_layout(c);
  auto find = [&](const std::vector<ParamInfo>& infos, const std::string& name) -> const ParamInfo* {
    for (const ParamInfo& p : infos)
      if (p.name == name) return &p;
    return nullptr;
  };
  REQUIRE(find(all, moe_name(1, "gate.weight")) != nullptr);
  CHECK(find(all, moe_name(1, "gate.weight"))->shape == Shape{4, 12});
  CHECK(find(all, moe_name(0, "experts.3.w1.weight"))->shape == Shape{10, 12});
  CHECK(find(all, moe_name(0, "experts.3.w2.weight"))->shape == Shape{12, 10});
  CHECK(find(all, moe_name(0, "experts.3.w3.weight"))->expert == 3);
  CHECK(find(all, "model.layers.0.mlp.gate_proj.weight") == nullptr);
  // Counts: the store holds num_parameters(); a token uses k of the E experts of each layer.
  std::int64_t total = 0;
  for (const ParamInfo& p : all) total += p.numel;
  CHECK(total == c.num_parameters());
  const std::int64_t expert = 3 * c.hidden * c.ffn;
  CHECK(c.num_parameters() - c.active_parameters() == c.layers * (c.experts - c.experts_per_token) * expert);
  // ep = 2: rank 1 holds experts 2 and 3 of every layer, the router and everything else whole.
  const std::vector<ParamInfo> shard = llama_param_layout(c, {}, EpShard{2, 1});
  CHECK(find(shard, moe_name(0, "experts.1.w1.weight")) == nullptr);
  CHECK(find(shard, moe_name(0, "experts.2.w1.weight")) != nullptr);
  CHECK(find(shard, moe_name(1, "gate.weight")) != nullptr);
  std::int64_t held = 0;
  for (const ParamInfo& p : shard) held += p.numel;
  CHECK(held == c.num_parameters() - c.layers * 2 * expert);
  // Bad shapes: one clear message each.
  CHECK_THROWS_WITH(llama_param_layout(c, {}, EpShard{3, 0}), Catch::Contains("ep must divide the number of experts"));
  CHECK_THROWS_WITH(llama_param_layout(c, TpShard{2, 0}), Catch::Contains("with a mixture of experts"));
  ModelConfig bad = c;
  bad.experts_per_token = 5;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("top-k = 5 experts per token must be between 1 and the number of experts (4)"));
  bad = c;
  bad.capacity_factor = -1;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("capacity factor must be > 0"));
  CHECK_THROWS_WITH(llama_param_layout(testing::small_model({}), {}, EpShard{2, 0}), Catch::Contains("needs a model with experts"));
}

TEST_CASE("MoE layers: the bytes each layer saves are what the tracker measured; recomputation agrees", "[model][moe]") {
  const ModelConfig c = moe_config(0.6);
  const Tensor in = random_tokens(2, 7, c.vocab, 4, "inputs");
  const Tensor tgt = random_tokens(2, 7, c.vocab, 4, "targets");
  std::vector<float> first;
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    INFO("recompute " << recompute_name(r));
    ParamStore params(c);
    params.init(3);
    Model model(params, {r});
    model.forward(in, tgt);
    for (int u = 1; u <= c.layers; ++u) CHECK(model.saved_bytes()[u] == model.measured_saved_bytes()[u]);
    model.backward();
    // The three modes run the same arithmetic: the same gradients bit for bit.
    if (first.empty()) first = params.flat_grad().to_floats();
    else CHECK(params.flat_grad().to_floats() == first);
  }
}
