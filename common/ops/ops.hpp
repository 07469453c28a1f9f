// The model's operators, forward and backward, on tensors. Shapes are in the comments:
//   N = rows (batch·sequence tokens), B = batch, T = sequence, H = heads, G = kv heads,
//   D = head dim, C = hidden, F = ffn, V = vocab.
// Every op dispatches on the tensors' device (all of an op's tensors on the same one): the CPU
// implementations are in ops/*.cpp (OpenBLAS sgemm for matmuls, plain loops elsewhere; one
// thread per rank), their CUDA twins in ops/cuda/ (cuBLAS for the matmuls, one kernel per op
// over the host-device bodies of ops/cuda/op_bodies.hpp). Float arguments may be f32, bf16 or f16: the op
// computes in fp32 (bf16 inputs widened, outputs rounded to nearest even). Integer arguments
// are i32. Scratch space goes through the memory tracker as Temporary.
//
// Backward functions ACCUMULATE into parameter gradients (dw += ...), because gradient
// accumulation and tied weights add several contributions; input gradients are overwritten
// unless the argument is named d*_acc (then they accumulate too).
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ops {

// ---- FLOP counting (for MFU / HFU) ---------------------------------------------------------
// Every op adds the floating-point operations of its matrix products (a multiply-add is 2) to a
// per-thread counter; the model reads it around its phases. Only matmul-like work counts:
// matmul_forward 2·N·out·in, matmul_backward 2·N·out·in for each of dx and dw it computes;
// attention 2·B·H·T²·D per [T, T] product, counted in full although the causal mask lets it skip
// about half (the Megatron / playbook convention for MFU): 2 products forward, 4 backward, plus
// 1 when backward recomputes the probabilities. Element-wise ops (embedding, RMSNorm, RoPE,
// SwiGLU, softmax, cross-entropy, add, scale) add nothing.
std::int64_t flop_count();
void reset_flop_count();
void add_flops(std::int64_t n);

// ---- matmul: y = x · wᵀ (a Linear layer with HF's [out, in] weight layout) ----------------
// x [N, in], w [out, in] -> y [N, out]
void matmul_forward(const Tensor& x, const Tensor& w, Tensor& y);
// dy [N, out]: dx = dy · w (overwritten, or added when accumulate_dx), dw += dyᵀ · x.
// dx and/or dw may be undefined tensors to skip them.
void matmul_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw,
                     bool accumulate_dx = false);

// ---- embedding ----------------------------------------------------------------------------
// tokens [N] i32, table [V, C] -> out [N, C]; throws Error for a token outside [0, V).
void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out);
// dtable[tokens[n]] += dout[n]
void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable);

// ---- RMSNorm: y = x / sqrt(mean(x²) + eps) · w ----------------------------------------------
// x [N, C], w [C] -> y [N, C], rstd [N] (f32 always: 1 / sqrt(mean(x²) + eps))
void rmsnorm_forward(const Tensor& x, const Tensor& w, Tensor& y, Tensor& rstd, float eps);
// dx_acc += ∂L/∂x (the residual stream's gradient is accumulated), dw += ∂L/∂w
void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd,
                      Tensor& dx_acc, Tensor& dw);

// ---- RoPE (Hugging Face's rotate-half convention), in place ---------------------------------
// x [B, T, H, D]: for head-dim index i < D/2, with angle = pos · theta^(-2i/D):
//   x[i]       <- x[i] cos - x[i + D/2] sin
//   x[i + D/2] <- x[i + D/2] cos + x[i] sin
// pos = t, or positions[t] when positions [T] i32 (>= 0) is given: the positions in the whole
// sequence of the tokens a rank holds when context parallelism splits it (chapter 07).
void rope_forward(Tensor& x, double theta, const Tensor& positions = Tensor());
// The transpose (inverse) rotation, applied to the gradient in place.
void rope_backward(Tensor& dx, double theta, const Tensor& positions = Tensor());

// ---- causal grouped-query attention ----------------------------------------------------------
// q [B, T, H, D], k, v [B, T, G, D] -> out [B, T, H, D]; query head j reads kv head j / (H/G).
// probs [B, H, T, T]: softmax(q·kᵀ/√D + causal mask) is written there when defined (entries
// above the diagonal are 0); when undefined, it lives in a Temporary and is freed.
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& probs);
// The forward's second half, for a caller that makes the probabilities itself (a chapter's own
// softmax, ModelOptions::attention_probs): probs [B, H, T, T] f32 (zero above the diagonal),
// v [B, T, G, D] -> out [B, T, H, D] = P · v per head, as attention_forward computes it. Counts the
// one product's FLOPs (the caller counts its q·kᵀ).
void attention_forward_from_probs(const Tensor& probs, const Tensor& v, Tensor& out);
// dout [B, T, H, D] -> dq [B, T, H, D], dk, dv [B, T, G, D] (overwritten). probs may be undefined:
// then it is recomputed from q and k into a Temporary (selective recomputation), rounded to q's
// dtype as a saved probs tensor would be (so bf16 recomputation changes no gradient bit), and
// the recomputation's FLOPs are counted like any others.
void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& probs, Tensor& dq, Tensor& dk, Tensor& dv);

// ---- one block of causal attention at given positions, with its log-sum-exp --------------------
// The building block of attention over a sequence split across ranks (chapter 07) and of tiled
// attention: queries q [B, Tq, H, D] against one block of keys and values k, v [B, Tk, G, D], each
// token at its position in the whole sequence (q_pos [Tq], k_pos [Tk] i32, on the same device as
// the other arguments); key j is visible to
// query i iff k_pos[j] <= q_pos[i]. With s = q·kᵀ/√D over the visible keys:
//   lse [B, H, Tq] f32 = log Σ exp(s)  (-inf for a query that sees no key of the block)
//   out [B, Tq, H, D]  = softmax(s) · v (0 for such a query)   (both overwritten)
// Partial results of several blocks merge by their lse (chapter 07's exercise 07.1).
void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_pos,
                             const Tensor& k_pos, Tensor& out, Tensor& lse);
// Backward of the block, from the gradients of BOTH its outputs: dout [B, Tq, H, D] and dlse
// [B, H, Tq] (undefined: 0), with the block's own out and lse. dq, dk, dv ACCUMULATE:
//   p = exp(s - lse), dv += pᵀ·dout, ds = p ∘ (dout·vᵀ - rowsum(dout ∘ out) + dlse),
//   dq += ds·k/√D, dk += dsᵀ·q/√D.
void attention_block_backward(const Tensor& dout, const Tensor& dlse, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& q_pos, const Tensor& k_pos, const Tensor& out,
                              const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv);

// ---- SwiGLU: z = silu(g) · u,  silu(x) = x · sigmoid(x) -------------------------------------
// g, u [N, F] -> z [N, F]
void swiglu_forward(const Tensor& g, const Tensor& u, Tensor& z);
// dz [N, F] -> dg, du [N, F] (overwritten)
void swiglu_backward(const Tensor& dz, const Tensor& g, const Tensor& u, Tensor& dg, Tensor& du);

// ---- element-wise ------------------------------------------------------------------------------
void add_inplace(Tensor& y, const Tensor& x);  // y += x (same numel)
void scale_inplace(Tensor& y, float s);        // y *= s
// dst = src in dst's float dtype (same numel, same device): widened exactly, or rounded to
// nearest even.
void convert(const Tensor& src, Tensor& dst);

// ---- cross-entropy over the vocabulary ------------------------------------------------------
// logits [N, V], targets [N] i32 -> mean over the N rows of -log softmax(logits)[target]
// (double accumulation). Throws Error for a target outside [0, V).
double cross_entropy_forward(const Tensor& logits, const Tensor& targets);
// dlogits = scale · (softmax(logits) - onehot(targets)) / N   (overwritten)
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits, float scale);

}  // namespace usp::ops
