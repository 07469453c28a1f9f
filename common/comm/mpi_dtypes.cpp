#include "common/comm/mpi_dtypes.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <string>

#include "common/error.hpp"
#include "common/comm/mpi_call.hpp"

namespace usp::mpi {
namespace {

constexpr std::size_t kBlock = 256;  // elements widened to float at a time (on the stack)

float combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::sum:
    case ReduceOp::avg: break;
  }
  return a + b;
}

// The body of the user-defined op for a narrow float type: inout[i] = in[i] (op) inout[i].
template <DType T, ReduceOp Op>
void narrow_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  constexpr std::size_t es = T == DType::e4m3 || T == DType::e5m2 ? 1 : 2;
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(inout);
  float a[kBlock], b[kBlock];
  for (std::size_t done = 0, n = static_cast<std::size_t>(*len); done < n; done += kBlock) {
    const std::size_t m = std::min(kBlock, n - done);
    convert_to_float(T, src + done * es, a, m);
    convert_to_float(T, dst + done * es, b, m);
    for (std::size_t i = 0; i < m; ++i) b[i] = combine(Op, a[i], b[i]);
    convert_from_float(b, T, dst + done * es, m);
  }
}

constexpr std::array<DType, 4> kNarrow = {DType::bf16, DType::f16, DType::e4m3, DType::e5m2};
constexpr std::array<ReduceOp, 3> kNarrowOps = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};

int narrow_index(DType t) {
  for (std::size_t i = 0; i < kNarrow.size(); ++i)
    if (kNarrow[i] == t) return static_cast<int>(i);
  return -1;
}

int op_index(ReduceOp op) { return op == ReduceOp::max ? 1 : op == ReduceOp::min ? 2 : 0; }

template <DType T>
MPI_User_function* narrow_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return &narrow_reduce<T, ReduceOp::max>;
    case ReduceOp::min: return &narrow_reduce<T, ReduceOp::min>;
    case ReduceOp::sum:
    case ReduceOp::avg: break;
  }
  return &narrow_reduce<T, ReduceOp::sum>;
}

MPI_User_function* narrow_function(DType t, ReduceOp op) {
  switch (t) {
    case DType::bf16: return narrow_function<DType::bf16>(op);
    case DType::f16: return narrow_function<DType::f16>(op);
    case DType::e4m3: return narrow_function<DType::e4m3>(op);
    case DType::e5m2: return narrow_function<DType::e5m2>(op);
    default: break;
  }
  throw Error(std::string("no narrow reduction for dtype ") + dtype_name(t));
}

MPI_Op predefined(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::sum:
    case ReduceOp::avg: break;
  }
  return MPI_SUM;
}

}  // namespace

MPI_Datatype element_type(DType t) {
  switch (dtype_size(t)) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    case 4: return MPI_UINT32_T;
    default: break;
  }
  throw Error(std::string("MPI backend: no element type for dtype ") + dtype_name(t));
}

Reduction reduction(DType t, ReduceOp op) {
  if (t == DType::f32) return {MPI_FLOAT, predefined(op)};
  if (t == DType::i32) return {MPI_INT32_T, predefined(op)};
  const int ti = narrow_index(t);
  if (ti < 0) throw Error(std::string("MPI backend: cannot reduce dtype ") + dtype_name(t));

  // Declared commutative (they are: a + b == b + a exactly, in float as in bf16), which lets
  // MPI pick the same algorithms it uses for MPI_SUM on floats.
  static std::mutex mu;
  static std::array<std::array<MPI_Op, kNarrowOps.size()>, kNarrow.size()> ops = [] {
    std::array<std::array<MPI_Op, kNarrowOps.size()>, kNarrow.size()> a{};
    for (auto& row : a) row.fill(MPI_OP_NULL);
    return a;
  }();
  std::lock_guard<std::mutex> guard(mu);
  MPI_Op& slot = ops[static_cast<std::size_t>(ti)][static_cast<std::size_t>(op_index(op))];
  if (slot == MPI_OP_NULL) {
    Lock lock;
    check(MPI_Op_create(narrow_function(t, op), 1, &slot), "MPI_Op_create");
  }
  return {element_type(t), slot};
}

void divide(DType t, void* data, std::int64_t n, int d) {
  if (n <= 0 || d == 1) return;
  if (t == DType::f32) {
    auto* p = static_cast<float*>(data);
    const float fd = static_cast<float>(d);
    for (std::int64_t i = 0; i < n; ++i) p[i] /= fd;
    return;
  }
  if (t == DType::i32) {
    auto* p = static_cast<std::int32_t*>(data);
    for (std::int64_t i = 0; i < n; ++i) p[i] /= d;
    return;
  }
  const std::size_t es = dtype_size(t);
  auto* bytes = static_cast<unsigned char*>(data);
  float block[kBlock];
  const float fd = static_cast<float>(d);
  for (std::size_t done = 0, total = static_cast<std::size_t>(n); done < total; done += kBlock) {
    const std::size_t m = std::min(kBlock, total - done);
    convert_to_float(t, bytes + done * es, block, m);
    for (std::size_t i = 0; i < m; ++i) block[i] /= fd;
    convert_from_float(block, t, bytes + done * es, m);
  }
}

}  // namespace usp::mpi
