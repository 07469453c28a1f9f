// Exercise 06.1: the column- and row-parallel linear blocks, with the conjugate operators f and
// g that make them exact (Megatron-LM, Shoeybi et al. 2019; sequence parallelism: Korthikanti et
// al. 2022). Implemented in solutions/06_tensor_parallel/parallel_linear.cpp; the stubs are in
// exercises/06_tensor_parallel/parallel_linear.cpp.
//
// A Linear layer y = x·Wᵀ with W [out, in] (Hugging Face's layout) splits two ways over the t
// ranks of a tensor-parallel group:
//   column-parallel: rank r holds rows [r·out/t, (r+1)·out/t) of W and computes those output
//     features, y_r = x·W_rᵀ, from the WHOLE input x;
//   row-parallel: rank r holds columns [r·in/t, (r+1)·in/t) of W, receives those input features
//     x_r, and computes a PARTIAL y: y = Σ_r x_r·W_rᵀ, a sum over the group.
// A column block followed by a row block (q, k, v → attention → o; gate, up → SwiGLU → down)
// needs no communication in between: the column block's output features are exactly the row
// block's input features. Only the block's entry and exit communicate:
//
//             forward                          backward
//   f (entry) identity: every rank has x       all-reduce: dx = Σ_r (dy_r·W_r), each rank only
//                                              has its own term
//   g (exit)  all-reduce: y = Σ_r x_r·W_rᵀ     identity: every rank has dy
//
// Sequence parallelism keeps the residual stream between the blocks split by rows (each rank
// n = N/t of the N = B·T token rows, rows [r·n, (r+1)·n)): f's forward becomes an all-gather of
// the rows (every rank needs the whole input), its backward a reduce-scatter (sum, then keep my
// rows); g's forward a reduce-scatter, its backward an all-gather. The bytes are the same as the
// all-reduce's (an all-reduce IS a reduce-scatter followed by an all-gather), but the norms, the
// residual adds and their saved activations now touch n rows instead of N.
// Under sequence parallelism the column block keeps only x's own rows for backward and gathers
// them again there (so its saved input is n·C, not N·C): one more all-gather per column block in
// backward, the price of dividing that activation by t.
//
// Shapes (C = hidden = the stream's width; n = N, or N/t with sequence parallelism):
//   column block: x [n, C], w[i] [out_i/t, C] -> y[i] [N, out_i/t]
//   row block:    x [N, in/t], w [C, in/t]    -> y [n, C]
// Tensors may be f32 or bf16 (the activation dtype); gradients dx, dy are f32. Every tensor of a
// call lives on the group's device (comm.device(): the CPU, a GPU, or the emulated cpu:1), and so
// must anything you allocate: Tensor::empty's device defaults to the CPU, and a CPU buffer handed
// to a GPU's communicator or op stops the run. Buffers for the communication are
// MemCategory::Temporary (or CommBuffer); allocate nothing else.
#pragma once
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/tensor.hpp"

namespace usp::ch06 {

// The tensor-parallel group a block runs on.
struct TpGroup {
  Communicator& comm;               // the t ranks that share the layer's weights
  bool sequence_parallel = false;   // the stream's rows are split over them too
};

// y[i] = f(x)·w[i]ᵀ for every weight i (several linears reading one input share one f).
void column_parallel_forward(const TpGroup& group, const Tensor& x, const std::vector<Tensor>& w,
                             std::vector<Tensor>& y);
// dy[i] [N, out_i/t], the forward's x -> dw[i] += dy[i]ᵀ·f(x) (accumulate), and
// dx [n, C] = f's backward of Σ_i dy[i]·w[i] (overwritten). Communicate once for all i.
void column_parallel_backward(const TpGroup& group, const std::vector<Tensor>& dy, const Tensor& x,
                              const std::vector<Tensor>& w, std::vector<Tensor>& dw, Tensor& dx);

// y = g(x·wᵀ) (overwritten).
void row_parallel_forward(const TpGroup& group, const Tensor& x, const Tensor& w, Tensor& y);
// dy [n, C] -> with dyg = g's backward of dy [N, C]: dx = dyg·w (overwritten), dw += dygᵀ·x.
void row_parallel_backward(const TpGroup& group, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                           Tensor& dw);

}  // namespace usp::ch06
