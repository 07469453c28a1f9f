// How each dtype travels and reduces over MPI.
//
// Moving data (broadcast, gathers, scatter, all_to_all(v), send/recv) never looks at values:
// elements go as an opaque unsigned integer of their size, so bits arrive untouched and MPI
// counts are in elements (a 4-byte dtype reaches 4x further before the int count limit than
// bytes would).
//
// Reducing needs arithmetic: f32 and i32 use MPI's own types and ops. MPI knows no bf16, f16
// or fp8, so those reduce through user-defined ops that widen both operands to float (with the
// codecs of float_formats.hpp, behind convert_to_float), combine, and round back: each step of
// MPI's reduction tree rounds once, as NCCL's bf16 reductions do. avg is sum, then a division
// by the rank count where the result lands.
#pragma once
#include <mpi.h>

#include <cstdint>

#include "common/dtype.hpp"
#include "common/comm/communicator.hpp"

namespace usp::mpi {

// The type that carries dtype t's elements as bits.
MPI_Datatype element_type(DType t);

struct Reduction {
  MPI_Datatype type;
  MPI_Op op;
};
// The datatype and op that reduce t with op (avg reduces as sum). User-defined ops are created
// on first use, once per process, and live until MPI_Finalize. Call after MPI_Init.
Reduction reduction(DType t, ReduceOp op);

// Divides n elements of type t in place by d (the second half of avg). i32 divides as C++
// integers do (truncating); float types round once to their format.
void divide(DType t, void* data, std::int64_t n, int d);

}  // namespace usp::mpi
