// The playbook's 8B model (playbook-8.86b: L 32, h 4096, v 128256, s 4096, one sequence per
// micro-batch, bf16 with fp32 master weights and Adam, no recomputation) on one GPU and under each
// parallelism alone, degree 2, 4 and 8 — ZeRO-1/2/3 over DP, TP (with SP), PP (the first stage,
// 1F1B with p micro-batches in flight), CP — and under a 3D layout: what one GPU holds, by
// category, from the calculator (calc::memory_per_rank). Each dimension cuts a different part:
// ZeRO the states, TP+SP the weights and activations, PP the layers (but more micro-batches in
// flight), CP the activations only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/calc/memory_model.hpp"
#include "common/report/table.hpp"

namespace usp::ch10 {

struct DimensionMemory {
  std::string dimension;  // "none", "ZeRO-1", "ZeRO-2", "ZeRO-3", "TP+SP", "PP", "CP", "DP·TP·PP"
  std::int64_t degree = 1;
  calc::MemoryBreakdown bytes;
};

std::vector<DimensionMemory> memory_by_dimension();
// memory_8b.csv: dimension,degree,parameters,gradients,optimizer,activations,total
report::Table memory_by_dimension_table(const std::vector<DimensionMemory>& rows);

}  // namespace usp::ch10
