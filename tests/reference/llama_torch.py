"""The course's Llama decoder in plain PyTorch (no transformers), with Hugging Face's
LlamaForCausalLM semantics; the oracle for the C++ model and the baseline of bench/.

Parameters are a dict {HF name: tensor}; the computation runs in their dtype (float64 for the
reference check, float32 for the benchmark). Shapes: B batch, T sequence, C hidden, H heads,
G kv heads, D = C / H head dim, F ffn, V vocab.
"""
import json
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class LlamaShape:
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tied: bool = False
    # Mixture of experts (Hugging Face's MixtralConfig): experts = 0 is the dense MLP.
    experts: int = 0
    top_k: int = 2
    aux_coef: float = 0.0
    capacity_factor: float = 0.0  # 0: dropless (Mixtral)

    @staticmethod
    def from_config_json(path):
        """Reads Hugging Face's LlamaConfig fields from a config.json."""
        with open(path) as f:
            c = json.load(f)
        if c.get("head_dim", c["hidden_size"] // c["num_attention_heads"]) * c["num_attention_heads"] != c["hidden_size"]:
            raise ValueError(f"{path}: head_dim {c.get('head_dim')} is not hidden_size / num_attention_heads")
        return LlamaShape(
            vocab=c["vocab_size"], hidden=c["hidden_size"], layers=c["num_hidden_layers"],
            heads=c["num_attention_heads"], kv_heads=c.get("num_key_value_heads", c["num_attention_heads"]),
            ffn=c["intermediate_size"], rope_theta=float(c.get("rope_theta", 10000.0)),
            norm_eps=float(c.get("rms_norm_eps", 1e-6)), tied=bool(c.get("tie_word_embeddings", False)),
            experts=c.get("num_local_experts", 0) if c.get("model_type") == "mixtral" else 0,
            top_k=c.get("num_experts_per_tok", 2), aux_coef=float(c.get("router_aux_loss_coef", 0.001)),
            capacity_factor=float(c.get("usp_capacity_factor", 0.0)))

    def param_shapes(self):
        """{name: shape} in the order of common/model/params.hpp."""
        C, D, F_, V = self.hidden, self.hidden // self.heads, self.ffn, self.vocab
        shapes = {"model.embed_tokens.weight": (V, C)}
        for i in range(self.layers):
            p = f"model.layers.{i}."
            shapes[p + "input_layernorm.weight"] = (C,)
            shapes[p + "self_attn.q_proj.weight"] = (self.heads * D, C)
            shapes[p + "self_attn.k_proj.weight"] = (self.kv_heads * D, C)
            shapes[p + "self_attn.v_proj.weight"] = (self.kv_heads * D, C)
            shapes[p + "self_attn.o_proj.weight"] = (C, self.heads * D)
            shapes[p + "post_attention_layernorm.weight"] = (C,)
            if self.experts:
                shapes[p + "block_sparse_moe.gate.weight"] = (self.experts, C)
                for e in range(self.experts):
                    shapes[p + f"block_sparse_moe.experts.{e}.w1.weight"] = (F_, C)
                    shapes[p + f"block_sparse_moe.experts.{e}.w2.weight"] = (C, F_)
                    shapes[p + f"block_sparse_moe.experts.{e}.w3.weight"] = (F_, C)
                continue
            shapes[p + "mlp.gate_proj.weight"] = (F_, C)
            shapes[p + "mlp.up_proj.weight"] = (F_, C)
            shapes[p + "mlp.down_proj.weight"] = (C, F_)
        shapes["model.norm.weight"] = (C,)
        if not self.tied:
            shapes["lm_head.weight"] = (V, C)
        return shapes


def rms_norm(x, w, eps):
    # x * rsqrt(mean(x²) + eps) * w over the last dimension
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(T, D, theta, dtype):
    """cos, sin [T, D] for positions 0..T-1, inv_freq_i = theta^(-2i/D), halves repeated."""
    inv_freq = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)  # [D/2]
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]  # [T, D/2]
    angles = torch.cat([angles, angles], dim=-1)  # [T, D]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def attention(x, P, p, s, cos, sin):
    """x [B, T, C] (already normed) -> [B, T, C]: causal GQA with RoPE, then o_proj."""
    B, T, C = x.shape
    H, G, D = s.heads, s.kv_heads, s.hidden // s.heads
    q = (x @ P[p + "q_proj.weight"].t()).view(B, T, H, D).transpose(1, 2)  # [B, H, T, D]
    k = (x @ P[p + "k_proj.weight"].t()).view(B, T, G, D).transpose(1, 2)  # [B, G, T, D]
    v = (x @ P[p + "v_proj.weight"].t()).view(B, T, G, D).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    k = k.repeat_interleave(H // G, dim=1)  # query head j reads kv head j // (H/G)
    v = v.repeat_interleave(H // G, dim=1)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)  # [B, H, T, T]
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # [B, H, T, D]
    return out.transpose(1, 2).reshape(B, T, H * D) @ P[p + "o_proj.weight"].t()


def mlp(x, P, p):
    # down(silu(gate(x)) * up(x))
    return (F.silu(x @ P[p + "gate_proj.weight"].t()) * (x @ P[p + "up_proj.weight"].t())) @ P[p + "down_proj.weight"].t()


def moe(x, P, p, s):
    """x [B, T, C] (already normed) -> (out [B, T, C], E·Σ f_i·P_i): Mixtral's sparse MLP. Softmax over
    the router logits, each token's top-k experts with their probabilities renormalised to sum to 1;
    with a capacity factor, assignments past ceil(cf·N·k/E) per expert (in token order, each token's
    choices best first) are dropped. f_i: the fraction of tokens routed to expert i (before the
    capacity), P_i: the mean probability of expert i."""
    B, T, C = x.shape
    N, E, K = B * T, s.experts, s.top_k
    h = x.reshape(N, C)
    probs = torch.softmax(h @ P[p + "gate.weight"].t(), dim=-1)  # [N, E]
    top_p, top_e = torch.topk(probs, K, dim=-1)  # best first
    weights = top_p / top_p.sum(-1, keepdim=True)
    cap = math.ceil(s.capacity_factor * N * K / E) if s.capacity_factor > 0 else N * K
    taken = [0] * E
    out = torch.zeros_like(h)
    routed = torch.zeros(E, dtype=h.dtype)
    for t in range(N):
        for j in range(K):
            e = int(top_e[t, j])
            routed[e] += 1
            if taken[e] >= cap:
                continue
            taken[e] += 1
            q = p + f"experts.{e}."
            y = (F.silu(h[t] @ P[q + "w1.weight"].t()) * (h[t] @ P[q + "w3.weight"].t())) @ P[q + "w2.weight"].t()
            out = out.index_add(0, torch.tensor([t]), (weights[t, j] * y)[None, :])
    aux = E * ((routed / N) * probs.mean(0)).sum()
    return out.reshape(B, T, C), aux


def forward(P, s, inputs, targets=None):
    """inputs, targets [B, T] int64 -> (logits [B·T, V], mean next-token cross-entropy or None,
    the load-balancing loss: router_aux_loss_coef · the mean over layers of E·Σ f_i·P_i, 0 dense).
    Training minimises the cross-entropy plus the aux loss."""
    B, T = inputs.shape
    dtype = P["model.embed_tokens.weight"].dtype
    cos, sin = rope_tables(T, s.hidden // s.heads, s.rope_theta, dtype)
    cos, sin = cos.to(inputs.device), sin.to(inputs.device)
    x = P["model.embed_tokens.weight"][inputs]  # [B, T, C]
    aux = torch.zeros((), dtype=dtype)
    for i in range(s.layers):
        p = f"model.layers.{i}."
        x = x + attention(rms_norm(x, P[p + "input_layernorm.weight"], s.norm_eps), P, p + "self_attn.", s, cos, sin)
        h = rms_norm(x, P[p + "post_attention_layernorm.weight"], s.norm_eps)
        if s.experts:
            y, layer_aux = moe(h, P, p + "block_sparse_moe.", s)
            x = x + y
            aux = aux + s.aux_coef * layer_aux / s.layers
        else:
            x = x + mlp(h, P, p + "mlp.")
    x = rms_norm(x, P["model.norm.weight"], s.norm_eps)
    head = P["model.embed_tokens.weight" if s.tied else "lm_head.weight"]
    logits = (x @ head.t()).reshape(B * T, s.vocab)
    loss = None if targets is None else F.cross_entropy(logits, targets.reshape(B * T))
    return logits, loss, aux
