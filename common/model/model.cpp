// The decoder's forward and backward, layer by layer, with what each layer keeps spelled out
// in LayerSaved. Read forward_layer and backward_layer side by side: every tensor the backward
// reads is one the forward kept (or, under recomputation, one the backward rebuilds first).
#include "common/model/model.hpp"

#include <map>

#include "common/memory_tracker.hpp"
#include "common/model/moe.hpp"
#include "common/ops/ops.hpp"

namespace usp {

namespace {

// What a decoder layer keeps for its backward. N = B·T tokens; n stream rows held (N, or N/t
// under sequence parallelism); C hidden; Q = H·D; K = G·D; F ffn (H, G, F: this rank's share
// under tensor parallelism).
struct LayerSaved {
  Tensor x;             // [n, C]  the layer input (the residual stream)
  Tensor h1, rstd1;     // [n, C], [n] f32: input RMSNorm output and 1/rms
  Tensor q, k, v;       // [N, Q], [N, K], [N, K]: projections, q and k after RoPE
  Tensor probs;         // [B, H, T, T]: attention probabilities (Recompute::none only), or under
                        // context parallelism what its attention keeps (AttentionHook::saved)
  Tensor a;             // [N, Q]  attention output, the o_proj input
  Tensor x2;            // [n, C]  residual after attention
  Tensor h2, rstd2;     // [n, C], [n] f32: post-attention RMSNorm
  Tensor g, u, z;       // [N, F]  gate, up, silu(g)·u (the down_proj input)
  MoeSaved moe;         // with experts, instead of g, u, z: the MoE MLP's routing and expert rows

  std::int64_t bytes() const {
    std::int64_t n = moe.bytes();
    for (const Tensor* t : {&x, &h1, &rstd1, &q, &k, &v, &probs, &a, &x2, &h2, &rstd2, &g, &u, &z})
      if (t->defined()) n += static_cast<std::int64_t>(t->nbytes());
    return n;
  }
};

// What the head (final norm, lm_head, loss) keeps.
struct HeadSaved {
  Tensor xf;            // [n, C]  the last layer's output
  Tensor hf, rstdf;     // [n, C], [n] f32: final RMSNorm
  Tensor logits;        // [N, V]  (this rank's V/t vocabulary columns under tensor parallelism)
  Tensor loss_state;    // whatever the loss's backward needs (LinearHook::loss_forward)

  std::int64_t bytes() const {
    std::int64_t n = 0;
    for (const Tensor* t : {&xf, &hf, &rstdf, &logits, &loss_state})
      if (t->defined()) n += static_cast<std::int64_t>(t->nbytes());
    return n;
  }
};

// How much of a layer's forward state to keep.
enum class Keep {
  everything,      // Recompute::none, and the re-forward of Recompute::full
  no_probs,        // Recompute::selective
  input_only,      // Recompute::full
  nothing          // evaluation
};

// The probabilities [B, H, T, T] f32 (a Temporary) from the model's AttentionProbs. Their q·kᵀ
// FLOPs are counted here, since the maker is not an op.
Tensor probs_from(const AttentionProbs& make_probs, const Tensor& q4, const Tensor& k4) {
  const std::int64_t B = q4.dim(0), T = q4.dim(1), H = q4.dim(2), D = q4.dim(3);
  Tensor p32 = Tensor::empty({B, H, T, T}, DType::f32, MemCategory::Temporary, q4.device());
  make_probs(q4, k4, p32);
  ops::add_flops(2 * B * H * T * T * D);
  return p32;
}

// p32 stored as `dtype` (rounded to nearest even) in a tensor of `category`: what a layer keeps.
Tensor stored_as(const Tensor& p32, DType dtype, MemCategory category) {
  Tensor p = Tensor::empty(p32.shape(), dtype, category, p32.device());
  ops::convert(p32, p);
  return p;
}

std::int64_t activation_bytes_now() { return MemoryTracker::instance().current()[MemCategory::Activation]; }

}  // namespace

struct Model::Impl {
  // What one forward pass keeps until its backward. Several are held at once by a pipeline stage
  // (one per micro-batch in flight), keyed by the caller's micro-batch id.
  struct Pass {
    std::vector<LayerSaved> layers;  // [layer] (only the stage's layers are used)
    HeadSaved head;
    Tensor inputs, targets;          // [B, T] i32 (first / last stage)
    std::int64_t B = 0, T = 0;
  };
  std::map<int, Pass> passes;
  int last_id = 0;  // the last forward's pass (for logits())
};

namespace {

// Indices of one layer's parameters in the ParamStore (layout order of params.hpp).
struct LayerParams {
  int input_norm, q, k, v, o, post_norm;
  int gate, up, down;  // the dense MLP
  int router;          // with experts: the router; local expert j's w1, w2, w3 at expert0 + 3j + 0, 1, 2
  int expert0;
};

// Parameter 0 is the embedding; every layer then has the same number of parameters: 9 dense,
// 7 + 3 per expert held with experts.
LayerParams layer_params(const ParamStore& P, std::int64_t layer) {
  const ModelConfig& c = P.config();
  const int per_layer = c.is_moe() ? 7 + 3 * static_cast<int>(c.experts / P.layout().ep.size) : 9;
  const int base = 1 + static_cast<int>(layer) * per_layer;
  if (c.is_moe()) return {base, base + 1, base + 2, base + 3, base + 4, base + 5, -1, -1, -1, base + 6, base + 7};
  return {base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, base + 8, -1, -1};
}

// The MoE weights of a layer as views of the store (and their gradients when it has them).
MoeWeights moe_weights(const ParamStore& P, const LayerParams& ip) {
  MoeWeights w;
  const std::int64_t local = P.config().experts / P.layout().ep.size;
  const bool grads = P.has_grads();
  w.router = P.param(ip.router);
  if (grads) w.d_router = P.grad(ip.router);
  for (std::int64_t j = 0; j < local; ++j) {
    const int i = ip.expert0 + 3 * static_cast<int>(j);
    w.w1.push_back(P.param(i));
    w.w2.push_back(P.param(i + 1));
    w.w3.push_back(P.param(i + 2));
    if (grads) {
      w.d_w1.push_back(P.grad(i));
      w.d_w2.push_back(P.grad(i + 1));
      w.d_w3.push_back(P.grad(i + 2));
    }
  }
  return w;
}

// The layer's sizes on this rank: heads, kv heads and ffn are this rank's share of them (the
// weights' shard shapes), n the stream rows it holds.
struct LayerDims {
  std::int64_t N, n, C, H, G, D, F;
};

LayerDims layer_dims(const ParamStore& P, const LinearHook& linears, std::int64_t N) {
  const ModelConfig& c = P.config();
  const LayerParams ip = layer_params(P, 0);
  const std::int64_t D = c.head_dim();
  return {N, linears.stream_rows(N), c.hidden, P.infos()[ip.q].shape[0] / D, P.infos()[ip.k].shape[0] / D, D,
          c.is_moe() ? c.ffn : P.infos()[ip.gate].shape[0]};
}

// What every layer of one pass shares: the parameters, the parallelisms the model plugs in
// (attention null: the ops' attention over the tokens here), the batch's B and T, the activation dtype, and the
// probabilities' maker (empty: the ops' own softmax).
struct LayerContext {
  ParamStore& P;
  LinearHook& linears;
  AttentionHook* attention;
  ExpertParallel& ep;
  ResidualNorm& rn;
  const AttentionProbs& make_probs;
  std::int64_t B, T;
  DType adt;
};

// a4 [B, T, H, D] = attention over q4 [B, T, H, D], k4, v4 [B, T, G, D] (after RoPE), by the
// attention the model has: context-parallel, from the probabilities' maker, or the core's op.
// Returns what the layer keeps of it as `keep` says (undefined: nothing; the probabilities are
// then a Temporary).
Tensor attend(const LayerContext& ctx, const Tensor& q4, const Tensor& k4, const Tensor& v4, Keep keep, Tensor& a4) {
  const bool keep_all = keep == Keep::everything || keep == Keep::no_probs;
  Tensor probs;
  if (ctx.attention) {
    ctx.attention->attention_forward(q4, k4, v4, a4, probs);  // probs: what the hook's attention keeps
    if (!keep_all) probs = Tensor();
  } else if (ctx.make_probs) {
    // out = P·v from the f32 probabilities, as attention_forward does; the kept copy is rounded.
    const Tensor p32 = probs_from(ctx.make_probs, q4, k4);
    ops::attention_forward_from_probs(p32, v4, a4);
    if (keep == Keep::everything) probs = stored_as(p32, ctx.adt, MemCategory::Activation);
  } else {
    const std::int64_t B = q4.dim(0), T = q4.dim(1), H = q4.dim(2);
    if (keep == Keep::everything) probs = Tensor::empty({B, H, T, T}, ctx.adt, MemCategory::Activation, q4.device());
    ops::attention_forward(q4, k4, v4, a4, probs);
  }
  return probs;
}

// y [n, C] = the layer's MLP of h2 [n, C]: with experts the mixture of experts (moe.hpp: y = Σ
// over the token's kept experts of weight · expert(h2), its state in moe); else the dense SwiGLU
// z·Wdᵀ, z = silu(h2·Wgᵀ) ⊙ h2·Wuᵀ, through the tensor-parallel blocks, g, u, z [N, F] made in `cat`.
void mlp_forward(const LayerContext& ctx, const LayerParams& ip, const LayerDims& d, const Tensor& h2, bool keep_all,
                 MemCategory cat, Tensor& y, Tensor& g, Tensor& u, Tensor& z, MoeSaved& moe) {
  const ParamStore& P = ctx.P;
  if (P.config().is_moe()) {
    moe_forward(P.config(), ctx.ep, moe_weights(P, ip), h2, keep_all, y, moe);
    return;
  }
  g = Tensor::empty({d.N, d.F}, ctx.adt, cat, h2.device());
  u = Tensor::empty({d.N, d.F}, ctx.adt, cat, h2.device());
  z = Tensor::empty({d.N, d.F}, ctx.adt, cat, h2.device());
  {
    std::vector<Tensor> gu = {g, u};
    ctx.linears.column_forward(h2, {P.param(ip.gate), P.param(ip.up)}, gu);
  }
  ops::swiglu_forward(g, u, z);
  ctx.linears.row_forward(z, P.param(ip.down), y);
}

// One decoder layer forward: x [N, C] -> returns y [N, C] (an Activation: the next unit's input).
// Fills s with what backward needs, as `keep` says.
Tensor forward_layer(const LayerContext& ctx, std::int64_t layer, const Tensor& x, Keep keep, LayerSaved& s) {
  const ParamStore& P = ctx.P;
  const ModelConfig& c = P.config();
  const LayerParams ip = layer_params(P, layer);
  const LayerDims d = layer_dims(P, ctx.linears, ctx.B * ctx.T);
  const auto [N, n, C, H, G, D, F] = d;
  const std::int64_t B = ctx.B, T = ctx.T;
  const DType adt = ctx.adt;
  const float eps = static_cast<float>(c.norm_eps);
  // Kept tensors are Activations; the rest are Temporaries freed when this function returns.
  const bool keep_all = keep == Keep::everything || keep == Keep::no_probs;
  const MemCategory cat = keep_all ? MemCategory::Activation : MemCategory::Temporary;
  const Device dev = x.device();  // the parameters' device: every activation lives there too
  auto make = [&](Shape shape, DType dt = DType::f32) { return Tensor::empty(shape, dt, cat, dev); };

  Tensor h1 = make({n, C}, adt), rstd1 = make({n});
  ops::rmsnorm_forward(x, P.param(ip.input_norm), h1, rstd1, eps);

  Tensor q = make({N, H * D}, adt), k = make({N, G * D}, adt), v = make({N, G * D}, adt);
  {
    std::vector<Tensor> qkv = {q, k, v};
    ctx.linears.column_forward(h1, {P.param(ip.q), P.param(ip.k), P.param(ip.v)}, qkv);
  }
  Tensor q4 = q.reshape({B, T, H, D}), k4 = k.reshape({B, T, G, D}), v4 = v.reshape({B, T, G, D});
  const Tensor positions = ctx.attention ? ctx.attention->positions(T) : Tensor();  // undefined: 0..T-1
  ops::rope_forward(q4, c.rope_theta, positions);
  ops::rope_forward(k4, c.rope_theta, positions);

  Tensor a = make({N, H * D}, adt);
  Tensor a4 = a.reshape({B, T, H, D});
  const Tensor probs = attend(ctx, q4, k4, v4, keep, a4);

  Tensor x2 = make({n, C}, adt);
  ctx.linears.row_forward(a, P.param(ip.o), x2);
  // x2 = x + a·Woᵀ ; h2 = rmsnorm(x2)
  Tensor h2 = make({n, C}, adt), rstd2 = make({n});
  ctx.rn.forward(x2, x, P.param(ip.post_norm), h2, rstd2, eps);
  Tensor y = Tensor::empty({n, C}, adt, keep == Keep::nothing ? MemCategory::Temporary : MemCategory::Activation, dev);
  Tensor g, u, z;
  mlp_forward(ctx, ip, d, h2, keep_all, cat, y, g, u, z, s.moe);
  ops::add_inplace(y, x2);

  if (keep != Keep::nothing) s.x = x;
  if (keep_all) {
    s.h1 = h1; s.rstd1 = rstd1;
    s.q = q; s.k = k; s.v = v;
    s.probs = probs;
    s.a = a; s.x2 = x2;
    s.h2 = h2; s.rstd2 = rstd2;
    s.g = g; s.u = u; s.z = z;
  }
  return y;
}

void grad_ready(const ModelHooks& hooks, int param_index) {
  if (hooks.grad_ready) hooks.grad_ready(param_index);
}

// A linear block's weight: its gradient is final when the LinearHook's products are done (at once,
// or at chapter 08's W). hooks: the model's own (it outlives a deferred report).
void weight_grad_ready(LinearHook& linears, const ModelHooks& hooks, int param_index) {
  linears.after_weight_grads([&hooks, param_index] { grad_ready(hooks, param_index); });
}

// The layer's MLP half backward: y = x2 + mlp(h2), h2 = rmsnorm(x2). dy [n, C] f32 holds the
// gradient of y on entry, of x2 on return (the residual carries it through in place).
void backward_mlp_half(const LayerContext& ctx, const LayerParams& ip, const LayerDims& d, LayerSaved& s, Tensor& dy,
                       float aux_scale, const ModelHooks& hooks) {
  ParamStore& P = ctx.P;
  const ModelConfig& c = P.config();
  const auto [N, n, C, H, G, D, F] = d;
  auto tmp = [dev = dy.device()](Shape shape) {
    return Tensor::empty(shape, DType::f32, MemCategory::Temporary, dev);
  };
  auto ready = [&](int i) { grad_ready(hooks, i); };
  auto weight_ready = [&](int i) { weight_grad_ready(ctx.linears, hooks, i); };
  Tensor dh2 = tmp({n, C});
  if (c.is_moe()) {
    MoeWeights w = moe_weights(P, ip);
    moe_backward(c, ctx.ep, w, s.h2, dy, aux_scale, s.moe, dh2);
    const int last_expert_param = ip.expert0 + 3 * static_cast<int>(w.w1.size()) - 1;
    for (int i = last_expert_param; i >= ip.router; --i) ready(i);
  } else {
    // mlp = z·Wdᵀ
    Tensor dz = tmp({N, F});
    Tensor dWd = P.grad(ip.down);
    ctx.linears.row_backward(dy, s.z, P.param(ip.down), dz, dWd);
    weight_ready(ip.down);
    s.z = Tensor();
    // z = silu(g)·u ; g = h2·Wgᵀ ; u = h2·Wuᵀ
    Tensor dg = tmp({N, F}), du = tmp({N, F});
    ops::swiglu_backward(dz, s.g, s.u, dg, du);
    s.g = Tensor();
    s.u = Tensor();
    {
      std::vector<Tensor> dW = {P.grad(ip.gate), P.grad(ip.up)};
      ctx.linears.column_backward({dg, du}, s.h2, {P.param(ip.gate), P.param(ip.up)}, dW, dh2);
    }
    weight_ready(ip.up);
    weight_ready(ip.gate);
  }
  s.h2 = Tensor();
  // h2 = rmsnorm(x2): dx2 = dy (residual) + rmsnorm'(dh2)
  Tensor dwp = P.grad(ip.post_norm);
  ctx.rn.backward(dh2, s.x2, P.param(ip.post_norm), s.rstd2, dy, dwp);
  ready(ip.post_norm);
  s.x2 = Tensor();
  s.rstd2 = Tensor();
}

// The layer's attention half backward: x2 = x + a·Woᵀ, a = attention(q, k, v), q, k, v from
// h1 = rmsnorm(x). dy [n, C] f32 holds the gradient of x2 on entry, of x on return.
void backward_attention_half(const LayerContext& ctx, const LayerParams& ip, const LayerDims& d, LayerSaved& s,
                             Tensor& dy, const ModelHooks& hooks) {
  ParamStore& P = ctx.P;
  const ModelConfig& c = P.config();
  const auto [N, n, C, H, G, D, F] = d;
  const std::int64_t B = ctx.B, T = ctx.T;
  auto tmp = [dev = dy.device()](Shape shape) {
    return Tensor::empty(shape, DType::f32, MemCategory::Temporary, dev);
  };
  auto ready = [&](int i) { grad_ready(hooks, i); };
  auto weight_ready = [&](int i) { weight_grad_ready(ctx.linears, hooks, i); };
  Tensor da = tmp({N, H * D});
  Tensor dWo = P.grad(ip.o);
  ctx.linears.row_backward(dy, s.a, P.param(ip.o), da, dWo);
  weight_ready(ip.o);
  if (!ctx.attention) s.a = Tensor();  // an attention hook's backward reads its output
  // a = attention(q, k, v)
  Tensor dq = tmp({N, H * D}), dk = tmp({N, G * D}), dv = tmp({N, G * D});
  {
    Tensor da4 = da.reshape({B, T, H, D}), q4 = s.q.reshape({B, T, H, D});
    Tensor k4 = s.k.reshape({B, T, G, D}), v4 = s.v.reshape({B, T, G, D});
    Tensor dq4 = dq.reshape({B, T, H, D}), dk4 = dk.reshape({B, T, G, D}), dv4 = dv.reshape({B, T, G, D});
    const Tensor positions = ctx.attention ? ctx.attention->positions(T) : Tensor();
    if (ctx.attention) {
      ctx.attention->attention_backward(da4, q4, k4, v4, s.a.reshape({B, T, H, D}), s.probs, dq4, dk4, dv4);
      s.a = Tensor();
    } else {
      ops::attention_backward(da4, q4, k4, v4, s.probs, dq4, dk4, dv4);
    }
    s.probs = Tensor();
    s.v = Tensor();
    ops::rope_backward(dq4, c.rope_theta, positions);
    ops::rope_backward(dk4, c.rope_theta, positions);
  }
  // q, k, v = h1·Wqᵀ, h1·Wkᵀ, h1·Wvᵀ (reverse parameter order: v, k, q)
  Tensor dh1 = tmp({n, C});
  {
    std::vector<Tensor> dW = {P.grad(ip.q), P.grad(ip.k), P.grad(ip.v)};
    ctx.linears.column_backward({dq, dk, dv}, s.h1, {P.param(ip.q), P.param(ip.k), P.param(ip.v)}, dW, dh1);
  }
  weight_ready(ip.v);
  weight_ready(ip.k);
  weight_ready(ip.q);
  s.q = Tensor();
  s.k = Tensor();
  s.h1 = Tensor();
  // h1 = rmsnorm(x): dx = dx2 (residual) + rmsnorm'(dh1)
  Tensor dwi = P.grad(ip.input_norm);
  ops::rmsnorm_backward(dh1, s.x, P.param(ip.input_norm), s.rstd1, dy, dwi);
  ready(ip.input_norm);
  s.x = Tensor();
  s.rstd1 = Tensor();
}

// One decoder layer backward. dy [N, C] f32 is the gradient of the layer output; on return it
// holds the gradient of the layer input (the residual stream carries it through in place).
// Parameter gradients are accumulated; each saved tensor is released once it has been used.
void backward_layer(const LayerContext& ctx, std::int64_t layer, LayerSaved& s, Tensor& dy, float aux_scale,
                    const ModelHooks& hooks) {
  const LayerParams ip = layer_params(ctx.P, layer);
  const LayerDims d = layer_dims(ctx.P, ctx.linears, ctx.B * ctx.T);
  backward_mlp_half(ctx, ip, d, s, dy, aux_scale, hooks);
  backward_attention_half(ctx, ip, d, s, dy, hooks);
}

int head_weight_index(const ParamStore& P) {
  return P.config().tied_embeddings ? 0 : static_cast<int>(P.infos().size()) - 1;
}
int final_norm_index(const ParamStore& P) {
  return P.config().tied_embeddings ? static_cast<int>(P.infos().size()) - 1
                                    : static_cast<int>(P.infos().size()) - 2;
}

// Head forward: x [n, C] (the stream rows held) -> logits [N, V] (this rank's vocabulary
// columns under tensor parallelism), kept in h.logits when keep is true.
Tensor forward_head(const ParamStore& P, LinearHook& linears, const Tensor& x, std::int64_t N, DType adt, bool keep,
                    HeadSaved& h) {
  const ModelConfig& c = P.config();
  const std::int64_t n = x.dim(0), C = c.hidden, V = P.infos()[static_cast<std::size_t>(head_weight_index(P))].shape[0];
  const MemCategory cat = keep ? MemCategory::Activation : MemCategory::Temporary;
  Tensor hf = Tensor::empty({n, C}, adt, cat, x.device()), rstdf = Tensor::empty({n}, DType::f32, cat, x.device());
  ops::rmsnorm_forward(x, P.param(final_norm_index(P)), hf, rstdf, static_cast<float>(c.norm_eps));
  Tensor logits = Tensor::empty({N, V}, adt, cat, x.device());
  {
    std::vector<Tensor> out = {logits};
    linears.column_forward(hf, {P.param(head_weight_index(P))}, out);
  }
  if (keep) {
    h.xf = x;
    h.hf = hf;
    h.rstdf = rstdf;
    h.logits = logits;
  }
  return logits;
}

// What forward_stage needs before it looks at the input's tensors: one attention at a time (a hook
// or a probabilities maker, not both), and the batch's B and T. `caller` ("Model::forward_stage",
// "Model::evaluate_stage", ...) begins the messages: the function the user called.
void check_forward_request(const ModelOptions& options, bool probs_maker, const StageInput& in, const char* caller) {
  USP_CHECK(!(options.attention && probs_maker),
            "Model: an attention hook (ModelOptions::attention) and an attention-probabilities maker cannot both "
            "be set");
  USP_CHECK(in.batch > 0 && in.seq > 0, std::string(caller) + ": the batch's B and T must be given");
}

// What a stage's forward (forward_stage, evaluate_stage) needs of its input: the tokens on the
// first stage, the previous stage's output x [n, C] on the others, the targets on the last;
// tokens and targets [B, T] i32; T within the model's max_seq. `caller` begins the messages.
void check_stage_input(const ModelConfig& c, const StageInput& in, bool first_stage, bool last_stage, std::int64_t n,
                       const char* caller) {
  const std::string who = std::string(caller) + ": ";
  if (first_stage) USP_CHECK(in.tokens.defined(), who + "the first stage needs the tokens");
  if (!first_stage)
    USP_CHECK(in.x.defined() && in.x.numel() == n * c.hidden,
              who + "a stage after the first needs the previous stage's output [" + std::to_string(n) + ", " +
                  std::to_string(c.hidden) + "]");
  if (last_stage) USP_CHECK(in.targets.defined(), who + "the last stage needs the targets");
  auto check_tokens = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return;
    if (t.dtype() != DType::i32 || t.ndim() != 2 || t.dim(0) != in.batch || t.dim(1) != in.seq)
      throw Error(who + what + " must be [B, T] = [" + std::to_string(in.batch) + ", " + std::to_string(in.seq) +
                  "] i32 tokens");
  };
  check_tokens(in.tokens, "the tokens");
  check_tokens(in.targets, "the targets");
  if (in.seq > c.max_seq)
    throw UsageError("sequence length " + std::to_string(in.seq) + " exceeds the model's max_seq " +
                     std::to_string(c.max_seq));
}

// Head backward: the loss -> logits -> lm_head -> final norm, added into dx [n, C] f32 (zeros on
// entry; on return the last layer's output gradient). Releases what the head kept.
void backward_head(ParamStore& P, LinearHook& linears, HeadSaved& h, const Tensor& targets, float loss_scale, Tensor& dx,
                   const ModelHooks& hooks) {
  const ModelConfig& c = P.config();
  const Device dev = dx.device();
  Tensor dlogits = Tensor::empty(h.logits.shape(), DType::f32, MemCategory::Temporary, dev);
  linears.loss_backward(h.logits, targets, h.loss_state, dlogits, loss_scale);
  h.logits = Tensor();
  h.loss_state = Tensor();
  Tensor dhf = Tensor::empty({dx.dim(0), c.hidden}, DType::f32, MemCategory::Temporary, dev);
  const int wi = head_weight_index(P);
  {
    std::vector<Tensor> dW = {P.grad(wi)};
    linears.column_backward({dlogits}, h.hf, {P.param(wi)}, dW, dhf);
  }
  if (!c.tied_embeddings) weight_grad_ready(linears, hooks, wi);  // a tied head's: after the embedding's
  dlogits = Tensor();
  h.hf = Tensor();
  const int ni = final_norm_index(P);
  Tensor dwn = P.grad(ni);
  ops::rmsnorm_backward(dhf, h.xf, P.param(ni), h.rstdf, dx, dwn);
  grad_ready(hooks, ni);
  h.xf = Tensor();
  h.rstdf = Tensor();
}

// Before a layer's backward, what recomputation dropped in its forward is rebuilt: under
// Recompute::full the whole layer from its saved input (as Recompute::none would have kept it);
// under selective the probabilities, from the q and k the layer kept (the q·kᵀ product; without a
// maker of its own, attention_backward rebuilds them internally; context parallelism keeps what
// its attention needs). Returns the FLOPs repeated.
std::int64_t rebuild_for_backward(const LayerContext& ctx, Recompute recompute, std::int64_t layer, LayerSaved& s) {
  if (recompute == Recompute::full) {
    const std::int64_t r0 = ops::flop_count();
    Tensor input = s.x;
    s.x = Tensor();
    forward_layer(ctx, layer, input, Keep::everything, s);
    return ops::flop_count() - r0;
  }
  if (recompute == Recompute::selective && !ctx.attention) {
    const LayerDims d = layer_dims(ctx.P, ctx.linears, ctx.B * ctx.T);
    if (ctx.make_probs) {
      const Tensor q4 = s.q.reshape({ctx.B, ctx.T, d.H, d.D});
      const Tensor k4 = s.k.reshape({ctx.B, ctx.T, d.G, d.D});
      s.probs = stored_as(probs_from(ctx.make_probs, q4, k4), ctx.adt, MemCategory::Temporary);
    }
    return 2 * ctx.B * d.H * ctx.T * ctx.T * d.D;
  }
  return 0;
}

void check_batch(const ModelConfig& c, const Tensor& inputs, const Tensor& targets) {
  if (inputs.dtype() != DType::i32 || targets.dtype() != DType::i32)
    throw Error("Model: inputs and targets must be i32 token tensors");
  if (inputs.ndim() != 2 || inputs.shape() != targets.shape())
    throw Error("Model: inputs " + shape_str(inputs.shape()) + " and targets " + shape_str(targets.shape()) +
                " must both be [B, T]");
  if (inputs.dim(1) > c.max_seq)
    throw UsageError("sequence length " + std::to_string(inputs.dim(1)) + " exceeds the model's max_seq " +
                     std::to_string(c.max_seq));
}

}  // namespace

Model::Model(ParamStore& params, ModelOptions options)
    : params_(params),
      options_(options),
      linears_(options.linears ? options.linears : &unsplit_linears_),
      ep_(options.expert_parallel ? options.expert_parallel : &single_device_experts_),
      rn_(options.residual_norm ? options.residual_norm : &unfused_norm_),
      impl_(std::make_unique<Impl>()) {
  USP_CHECK(ep_->size() == params_.layout().ep.size,
            "Model: the expert-parallel group has " + std::to_string(ep_->size()) + " ranks but the parameters hold a " +
                std::to_string(params_.layout().ep.size) + "-way share of the experts");
  USP_CHECK(linears_->size() == params_.layout().tp.size,
            "Model: the tensor-parallel group has " + std::to_string(linears_->size()) + " ranks but the parameters are a " +
                std::to_string(params_.layout().tp.size) + "-way shard");
  if (options_.activation_dtype != DType::f32 && options_.activation_dtype != DType::bf16 &&
      options_.activation_dtype != DType::f16)
    throw UsageError(std::string("activation dtype must be f32, bf16 or f16, got ") +
                     dtype_name(options_.activation_dtype));
  const int units = params_.num_units(), last = last_unit();
  if (options_.stage.first_unit < 0 || options_.stage.first_unit > last || last >= units)
    throw UsageError("a pipeline stage holds units " + std::to_string(options_.stage.first_unit) + ".." +
                     std::to_string(last) + ", outside the model's 0.." + std::to_string(units - 1));
  if (config().tied_embeddings && (last == units - 1) != (options_.stage.first_unit == 0))
    throw UsageError("a tied head reads the embedding: with tied embeddings the first and the last unit must be on "
                     "the same pipeline stage");
}

Model::~Model() = default;

int Model::first_unit() const { return options_.stage.first_unit; }
int Model::last_unit() const {
  return options_.stage.last_unit < 0 ? params_.num_units() - 1 : options_.stage.last_unit;
}
int Model::passes_held() const { return static_cast<int>(impl_->passes.size()); }

double Model::forward(const Tensor& inputs, const Tensor& targets) {
  USP_CHECK(first_unit() == 0 && last_unit() == params_.num_units() - 1,
            "Model::forward runs the whole model; a pipeline stage uses forward_stage");
  USP_CHECK(impl_->passes.empty(), "Model::forward called twice without backward in between");
  check_batch(config(), inputs, targets);
  Tensor unused;
  return forward_stage(0, {.tokens = inputs, .targets = targets, .batch = inputs.dim(0), .seq = inputs.dim(1)}, unused);
}

void Model::backward(float loss_scale) {
  USP_CHECK(impl_->passes.count(0) == 1 && first_unit() == 0 && last_unit() == params_.num_units() - 1,
            "Model::backward called without a forward");
  Tensor unused;
  backward_stage(0, Tensor(), loss_scale, unused);
}

double Model::forward_stage(int id, const StageInput& in, Tensor& x_out) {
  const ModelConfig& c = config();
  USP_CHECK(impl_->passes.count(id) == 0, "Model::forward_stage: micro-batch " + std::to_string(id) +
                                              " already has a forward waiting for its backward");
  check_forward_request(options_, static_cast<bool>(attention_probs_), in, "Model::forward_stage");
  const int first = first_unit(), last = last_unit(), head_unit = params_.num_units() - 1;
  const std::int64_t N = in.batch * in.seq;
  const std::int64_t n = linears_->stream_rows(N);
  check_stage_input(c, in, first == 0, last == head_unit, n, "Model::forward_stage");
  const Device dev = params_.device();
  Impl::Pass& m = impl_->passes[id];
  // A forward that fails half-way keeps nothing: the micro-batch can be run again.
  struct DropOnThrow {
    std::map<int, Impl::Pass>& passes;
    int id;
    bool done = false;
    ~DropOnThrow() { if (!done) passes.erase(id); }
  } guard{impl_->passes, id};
  impl_->last_id = id;
  m.layers.resize(static_cast<std::size_t>(c.layers));
  m.B = in.batch;
  m.T = in.seq;
  // The tokens and targets on the parameters' device (a batch is made on the host).
  m.inputs = on_device(in.tokens, dev);
  m.targets = on_device(in.targets, dev);
  const DType adt = options_.activation_dtype;
  const int units = params_.num_units();
  saved_bytes_.assign(static_cast<std::size_t>(units), 0);
  measured_saved_bytes_.assign(static_cast<std::size_t>(units), 0);
  flops_ = {};
  aux_loss_ = 0;
  routing_.assign(c.is_moe() ? static_cast<std::size_t>(c.layers) : 0, MoeRouting{});
  const std::int64_t flops0 = ops::flop_count();
  auto before = [&](int u) { if (hooks_.before_forward) hooks_.before_forward(u); return activation_bytes_now(); };
  auto after = [&](int u, std::int64_t bytes0) {
    measured_saved_bytes_[static_cast<std::size_t>(u)] = activation_bytes_now() - bytes0;
    if (hooks_.after_forward) hooks_.after_forward(u);
  };

  // unit 0: token embedding -> x [n, C], the first layer's input; or the previous stage's output
  Tensor x = in.x.defined() ? in.x.reshape({n, c.hidden}) : Tensor();
  if (first == 0) {
    const std::int64_t b0 = before(0);
    x = Tensor::empty({n, c.hidden}, adt, MemCategory::Activation, dev);
    linears_->embedding_forward(m.inputs.reshape({N}), params_.param(0), x);
    after(0, b0);
  }

  const LayerContext ctx{params_, *linears_, options_.attention, *ep_, *rn_, attention_probs_, m.B, m.T, adt};
  const Keep keep = options_.recompute == Recompute::none        ? Keep::everything
                    : options_.recompute == Recompute::selective ? Keep::no_probs
                                                                 : Keep::input_only;
  for (int u = std::max(first, 1); u <= std::min(last, head_unit - 1); ++u) {
    const std::int64_t l = u - 1, b0 = before(u);
    LayerSaved& s = m.layers[static_cast<std::size_t>(l)];
    x = forward_layer(ctx, l, x, keep, s);
    saved_bytes_[static_cast<std::size_t>(u)] = s.bytes();
    if (c.is_moe()) {
      routing_[static_cast<std::size_t>(l)] = s.moe.routing;
      aux_loss_ += c.router_aux_loss_coef * s.moe.routing.aux / static_cast<double>(c.layers);
    }
    after(u, b0);
  }

  double loss = 0.0;
  if (last == head_unit) {
    const std::int64_t b0 = before(head_unit);
    forward_head(params_, *linears_, x, N, adt, /*keep=*/true, m.head);
    loss = linears_->loss_forward(m.head.logits, m.targets.reshape({N}), m.head.loss_state);
    saved_bytes_[static_cast<std::size_t>(head_unit)] = m.head.bytes();
    after(head_unit, b0);
  } else {
    x_out = x;  // [n, C]: the next stage's input
  }
  flops_.forward = ops::flop_count() - flops0;
  guard.done = true;
  return loss;
}

void Model::backward_stage(int id, const Tensor& dy, float loss_scale, Tensor& dx_out) {
  auto found = impl_->passes.find(id);
  USP_CHECK(found != impl_->passes.end(),
            "Model::backward_stage: micro-batch " + std::to_string(id) + " has no forward to go back through");
  Impl::Pass& m = found->second;
  const ModelConfig& c = config();
  const std::int64_t N = m.B * m.T;
  const int first = first_unit(), last = last_unit(), head_unit = params_.num_units() - 1;
  const std::int64_t flops0 = ops::flop_count();
  std::int64_t recompute = 0;
  const std::int64_t n = linears_->stream_rows(N);
  // Each MoE layer's load-balancing loss enters the objective with this weight (aux_loss()).
  const float aux_scale =
      static_cast<float>(loss_scale * c.router_aux_loss_coef / static_cast<double>(c.layers));

  // The residual stream's gradient [n, C] f32, carried down through the layers in place: from the
  // loss on the last stage, from the next stage's dy elsewhere.
  const Device dev = params_.device();
  Tensor dx = Tensor::zeros({n, c.hidden}, DType::f32, MemCategory::Temporary, dev);
  if (last == head_unit) {
    if (hooks_.before_backward) hooks_.before_backward(head_unit);
    backward_head(params_, *linears_, m.head, m.targets.reshape({N}), loss_scale, dx, hooks_);
    if (hooks_.after_backward) hooks_.after_backward(head_unit);
  } else {
    USP_CHECK(dy.defined() && dy.numel() == n * c.hidden && dy.dtype() == DType::f32,
              "Model::backward_stage: a stage before the last needs the next stage's gradient [" + std::to_string(n) +
                  ", " + std::to_string(c.hidden) + "] f32");
    dx.copy_from(dy.reshape({n, c.hidden}));
  }

  const LayerContext ctx{params_, *linears_, options_.attention, *ep_, *rn_, attention_probs_, m.B, m.T,
                         options_.activation_dtype};
  for (int u = std::min(last, head_unit - 1); u >= std::max(first, 1); --u) {
    const std::int64_t l = u - 1;
    if (hooks_.before_backward) hooks_.before_backward(u);
    LayerSaved& s = m.layers[static_cast<std::size_t>(l)];
    recompute += rebuild_for_backward(ctx, options_.recompute, l, s);
    backward_layer(ctx, l, s, dx, aux_scale, hooks_);
    if (hooks_.after_backward) hooks_.after_backward(u);
  }

  if (first == 0) {
    // unit 0: embedding
    if (hooks_.before_backward) hooks_.before_backward(0);
    Tensor dtable = params_.grad(0);
    linears_->embedding_backward(m.inputs.reshape({N}), dx, dtable);
    if (c.tied_embeddings) weight_grad_ready(*linears_, hooks_, 0);  // the head's product adds to it too
    else grad_ready(hooks_, 0);
    if (hooks_.after_backward) hooks_.after_backward(0);
  } else {
    dx_out = dx;  // [n, C]: the gradient of the stage's input, for the previous stage
  }

  flops_.recompute = recompute;
  flops_.backward = ops::flop_count() - flops0 - recompute;
  impl_->passes.erase(found);
}

double Model::evaluate(const Tensor& inputs, const Tensor& targets) {
  USP_CHECK(first_unit() == 0 && last_unit() == params_.num_units() - 1,
            "Model::evaluate runs the whole model, not a pipeline stage");
  check_batch(config(), inputs, targets);
  Tensor unused;
  return evaluate_stage({.tokens = inputs, .targets = targets, .batch = inputs.dim(0), .seq = inputs.dim(1)}, unused);
}

double Model::evaluate_stage(const StageInput& in, Tensor& x_out) {
  const Tensor out = forward_kept_nothing(in, "Model::evaluate_stage");
  if (last_unit() != params_.num_units() - 1) {
    x_out = out;
    return 0.0;
  }
  const Tensor labels = on_device(in.targets, params_.device());
  Tensor unused_state;
  return linears_->loss_forward(out, labels.reshape({labels.numel()}), unused_state);
}

Tensor Model::forward_logits(const Tensor& inputs) {
  USP_CHECK(first_unit() == 0 && last_unit() == params_.num_units() - 1,
            "Model::forward_logits runs the whole model, not a pipeline stage");
  check_batch(config(), inputs, inputs);
  // The targets are not read (no loss here); the stage input's check asks the last stage for them.
  return forward_kept_nothing({.tokens = inputs, .targets = inputs, .batch = inputs.dim(0), .seq = inputs.dim(1)},
                              "Model::forward_logits");
}

Tensor Model::forward_kept_nothing(const StageInput& in, const char* caller) {
  const ModelConfig& c = config();
  check_forward_request(options_, static_cast<bool>(attention_probs_), in, caller);
  const int first = first_unit(), last = last_unit(), head_unit = params_.num_units() - 1;
  const std::int64_t B = in.batch, T = in.seq, N = B * T;
  const std::int64_t n = linears_->stream_rows(N);
  check_stage_input(c, in, first == 0, last == head_unit, n, caller);
  const DType adt = options_.activation_dtype;
  const Device dev = params_.device();
  Tensor x = in.x.defined() ? in.x.reshape({n, c.hidden}) : Tensor();
  if (first == 0) {
    const Tensor tokens = on_device(in.tokens, dev);
    x = Tensor::empty({n, c.hidden}, adt, MemCategory::Temporary, dev);
    linears_->embedding_forward(tokens.reshape({N}), params_.param(0), x);
  }
  const LayerContext ctx{params_, *linears_, options_.attention, *ep_, *rn_, attention_probs_, B, T, adt};
  LayerSaved unused;
  aux_loss_ = 0;
  routing_.assign(c.is_moe() ? static_cast<std::size_t>(c.layers) : 0, MoeRouting{});
  for (int u = std::max(first, 1); u <= std::min(last, head_unit - 1); ++u) {
    const std::int64_t l = u - 1;
    x = forward_layer(ctx, l, x, Keep::nothing, unused);
    if (c.is_moe()) {
      routing_[static_cast<std::size_t>(l)] = unused.moe.routing;
      aux_loss_ += c.router_aux_loss_coef * unused.moe.routing.aux / static_cast<double>(c.layers);
    }
  }
  if (last != head_unit) return x;
  HeadSaved head;
  return forward_head(params_, *linears_, x, N, adt, /*keep=*/false, head);
}

const Tensor& Model::logits() const {
  const auto found = impl_->passes.find(impl_->last_id);
  USP_CHECK(found != impl_->passes.end() && found->second.head.logits.defined(),
            "Model::logits: no forward pass of the last stage is held");
  return found->second.head.logits;
}

}  // namespace usp
