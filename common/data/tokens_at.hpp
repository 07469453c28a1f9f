// The tokens of a batch at some positions of every sequence: what a rank keeps of each sequence
// when the sequence is split over ranks (context parallelism: chapter 07's trainer, and the 5D
// trainer of chapter 10, with the positions of cp_layout.hpp's rank_positions).
#pragma once
#include <cstdint>
#include <vector>

#include "common/data/dataset.hpp"

namespace usp {

// inputs and targets [B, T] -> [B, n]: column positions[j] of each row, j = 0 .. n-1, in that
// order (n = positions.size(); every position in [0, T)). Host tensors (i32).
Batch tokens_at(const Batch& batch, const std::vector<std::int32_t>& positions);

}  // namespace usp
