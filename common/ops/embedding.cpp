// Token embedding: a row gather forward, a row scatter-add backward (see ops.hpp).
//   forward   out [N, C] = table [V, C] rows tokens [N]
//   backward  dtable [V, C] += dout [N, C] scattered to rows tokens [N]
// Pure data movement and additions: no FLOPs counted. Every token is checked before anything is
// written, so a bad token leaves the outputs untouched.
#include <cstring>
#include <string>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ops {

using namespace detail;

namespace {
void check_tokens(const char* op, const std::int32_t* tok, std::int64_t n, std::int64_t vocab) {
  for (std::int64_t i = 0; i < n; ++i)
    if (tok[i] < 0 || tok[i] >= vocab)
      throw Error(std::string("ops::") + op + ": token " + std::to_string(tok[i]) + " at position " +
                  std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

// tokens [N] i32 in [0, V), table [V, C] and rows [N, C] of float dtypes.
void check_lookup(const char* op, const Tensor& tokens, const char* table_name, const Tensor& table,
                  const char* rows_name, const Tensor& rows) {
  check_i32(op, "tokens", tokens);
  check_float(op, table_name, table);
  check_float(op, rows_name, rows);
  USP_CHECK(table.ndim() == 2, std::string("ops::") + op + ": " + table_name + " is " + shape_str(table.shape()) +
                                   ", expected [V, C]");
  check_rows(op, rows_name, rows, tokens.numel(), table.dim(1));
  check_tokens(op, on_device(tokens, Device::cpu()).data<std::int32_t>(), tokens.numel(), table.dim(0));
}
}  // namespace

void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) {
  const char* op = "embedding_forward";
  check_lookup(op, tokens, "table", table, "out", out);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&tokens, &table, &out});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::embedding_forward(tokens, table, out);
    return;
  }
#endif
  const std::int64_t c = table.dim(1), n = tokens.numel();
  const std::int32_t* tok = tokens.data<std::int32_t>();

  // Same dtype: the row's bytes (for bf16 exactly what widening then rounding would give).
  // Different dtypes: one row converted at a time, no scratch.
  const std::size_t elem = dtype_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
  const std::size_t row = static_cast<std::size_t>(c);
  for (std::int64_t i = 0; i < n; ++i) {
    const char* from = src + static_cast<std::size_t>(tok[i]) * row * elem;
    if (table.dtype() == out.dtype()) {
      std::memcpy(dst + static_cast<std::size_t>(i) * row * elem, from, row * elem);
    } else if (out.dtype() == DType::f32) {
      convert_to_float(table.dtype(), from, out.data<float>() + i * c, row);
    } else {
      convert_from_float(reinterpret_cast<const float*>(from), out.dtype(),
                         dst + static_cast<std::size_t>(i) * row * dtype_size(out.dtype()), row);
    }
  }
}

void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) {
  const char* op = "embedding_backward";
  check_lookup(op, tokens, "dtable", dtable, "dout", dout);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&tokens, &dout, &dtable});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::embedding_backward(tokens, dout, dtable);
    return;
  }
#endif
  const std::int64_t c = dtable.dim(1), n = tokens.numel();
  const std::int32_t* tok = tokens.data<std::int32_t>();

  FloatIn df(dout);
  FloatOut tf(dtable, true);
  const float* d = df.data();
  float* t = tf.data();
  for (std::int64_t i = 0; i < n; ++i) {
    float* row = t + static_cast<std::int64_t>(tok[i]) * c;
    const float* g = d + i * c;
    for (std::int64_t j = 0; j < c; ++j) row[j] += g[j];
  }
  tf.store();
}

}  // namespace usp::ops
