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
            norm_eps=float(c.get("rms_norm_eps", 1e-6)), tied=bool(c.get("tie_word_embeddings", False)))

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


def forward(P, s, inputs, targets=None):
    """inputs, targets [B, T] int64 -> (logits [B·T, V], mean next-token cross-entropy or None)."""
    B, T = inputs.shape
    dtype = P["model.embed_tokens.weight"].dtype
    cos, sin = rope_tables(T, s.hidden // s.heads, s.rope_theta, dtype)
    cos, sin = cos.to(inputs.device), sin.to(inputs.device)
    x = P["model.embed_tokens.weight"][inputs]  # [B, T, C]
    for i in range(s.layers):
        p = f"model.layers.{i}."
        x = x + attention(rms_norm(x, P[p + "input_layernorm.weight"], s.norm_eps), P, p + "self_attn.", s, cos, sin)
        x = x + mlp(rms_norm(x, P[p + "post_attention_layernorm.weight"], s.norm_eps), P, p + "mlp.")
    x = rms_norm(x, P["model.norm.weight"], s.norm_eps)
    head = P["model.embed_tokens.weight" if s.tied else "lm_head.weight"]
    logits = (x @ head.t()).reshape(B * T, s.vocab)
    loss = None if targets is None else F.cross_entropy(logits, targets.reshape(B * T))
    return logits, loss
