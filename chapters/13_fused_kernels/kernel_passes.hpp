// A chain of operations as the kernels it launches. Each Pass is one sweep over whole tensors —
// one kernel launch on a GPU, one loop nest on the CPU — and names the tensors it reads and the
// ones it writes. The bytes a variant moves are counted from those same lists (each tensor read
// once and written once per pass: within a pass a row that is touched twice stays in cache), and
// a test checks the lists against what each pass really touches (touched_outside_declared).
//
//   Chain "residual + RMSNorm forward"
//     Variant "unfused": add, square, row_mean, rsqrt, mul_rows, mul_cols   (6 passes)
//     Variant "fused":   residual_rmsnorm                                   (1 pass)
// Every variant of a chain reads the chain's inputs and writes the chain's outputs; the
// unfused ones also keep intermediates (scratch) in memory.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.hpp"

namespace usp::ch13 {

struct Pass {
  std::string kernel;          // "add", "row_mean", "residual_rmsnorm", ...
  std::vector<Tensor> reads;   // views of the chain's tensors (shared storage)
  std::vector<Tensor> writes;  // a tensor both read and written appears in both lists
  std::function<void()> run;
  // Tensors the pass reads only a few elements of (a gather: one probability per row), with the
  // number of elements it reads.
  std::vector<std::pair<Tensor, std::int64_t>> gathers = {};

  std::int64_t bytes() const;  // Σ nbytes over reads and writes, plus the gathered elements
};

struct Variant {
  std::string name;             // "unfused", "fused", "core ops"
  std::vector<Tensor> scratch;  // intermediates held between passes (Temporary)
  std::vector<Pass> passes;

  std::int64_t bytes() const;
  std::int64_t scratch_bytes() const;
  void run() const;
};

struct Chain {
  std::string name;             // "residual + RMSNorm forward"
  std::string id;               // "norm_fwd" (CSV key)
  std::vector<Tensor> inputs;   // read by every variant
  std::vector<Tensor> outputs;  // written by every variant: what the variants must agree on
  // Puts inputs and outputs back to their starting values (outputs that accumulate, like dw, or
  // are updated in place, like AdamW's p, m and v, start from a given state). Called before each
  // variant runs; not timed.
  std::function<void()> reset;
  std::vector<Variant> variants;

  const Variant& variant(const std::string& name) const;  // throws Error when absent
};

// Runs `variant` from the reset state and returns a copy of every output (as floats, in order).
std::vector<std::vector<float>> run_outputs(const Chain& chain, const Variant& variant);

// Checks one pass's declared lists against what it touches: every float tensor of the chain (and
// the variant's scratch) that the pass does not declare is filled with NaN first, and every
// declared write-only tensor too; after the pass, a NaN in a declared output means it read
// something undeclared or left part of an output unwritten, and a changed undeclared tensor means
// an undeclared write. Returns "" when the lists are right, else what was wrong. Restores every
// tensor it poisoned (the chain is reset afterwards anyway).
std::string touched_outside_declared(const Chain& chain, const Variant& variant, std::size_t pass_index);

}  // namespace usp::ch13
