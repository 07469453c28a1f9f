// The size rules of each collective, checked by Communicator's public ops for every backend so
// that all of them reject the same mistakes with the same words. Each check throws usp::Error
// naming the op, on the issuing thread before communicating: a rule broken on every rank (the
// usual case: ranks run the same code) then fails on every rank, and no rank is left waiting.
#pragma once
#include <cstdint>
#include <vector>

#include "common/tensor.hpp"

namespace usp::collective_shapes {

// a and b hold the same dtype.
void same_dtype(const char* op, const Tensor& a, const Tensor& b);
// whole.numel() == n * part.numel(), same dtype (gather / all_gather out, scatter /
// reduce_scatter in).
void whole_is_n_parts(const char* op, const char* whole_name, const Tensor& whole,
                      const char* part_name, const Tensor& part, int n);
// in and out of all_to_all: same numel and dtype, a multiple of n.
void all_to_all(const Tensor& in, const Tensor& out, int n);
// all_to_allv: one non-negative count per rank, summing to in's and out's numel, and what
// `rank` sends itself is what it receives from itself.
void all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, const Tensor& out,
                 const std::vector<std::int64_t>& recv_counts, int n, int rank);
// send/recv tags: non-negative (MPI's wildcard and NCCL's lack of tags both forbid the rest).
void tag(const char* op, int tag);

}  // namespace usp::collective_shapes
