#include "chapters/07_context_parallel/cp_attention.hpp"

#include <algorithm>
#include <chrono>

#include "chapters/07_context_parallel/kv_gather_attention.hpp"
#include "chapters/07_context_parallel/ring_attention.hpp"
#include "chapters/07_context_parallel/ulysses_attention.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/trace.hpp"

namespace usp::ch07 {

std::int64_t AttentionWork::blocks() const {
  std::int64_t n = 0;
  for (const auto& step : blocks_per_step) n += static_cast<std::int64_t>(step.size());
  return n;
}

CpAttentionBase::CpAttentionBase(Communicator& cp, CpSharding sharding) : cp_(cp), sharding_(sharding) {}

Tensor positions_on(const std::vector<std::int32_t>& positions, Device device) {
  Tensor host = Tensor::empty({static_cast<std::int64_t>(positions.size())}, DType::i32, MemCategory::Temporary);
  std::copy(positions.begin(), positions.end(), host.data<std::int32_t>());
  return on_device(host, device);
}

const Tensor& CpAttentionBase::positions(std::int64_t tokens) const {
  if (!positions_.defined() || positions_.numel() != tokens)
    positions_ = positions_on(rank_positions(sharding_, tokens * cp_.size(), cp_.size(), cp_.rank()), cp_.device());
  return positions_;
}

const Tensor& CpAttentionBase::gathered_positions(std::int64_t tokens) const {
  const int W = cp_.size();
  if (!all_positions_.defined() || all_positions_.numel() != W * tokens) {
    std::vector<std::int32_t> all;
    for (int w = 0; w < W; ++w)
      for (std::int32_t p : rank_positions(sharding_, W * tokens, W, w)) all.push_back(p);
    all_positions_ = positions_on(all, cp_.device());
  }
  return all_positions_;
}

double traced_seconds(const std::string& name, Device device, const std::function<void()>& compute) {
  TraceScope span(name);
  const auto t0 = std::chrono::steady_clock::now();
  compute();
  synchronize_compute(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<CpAttentionBase> make_cp_attention(CpAttention variant, Communicator& cp, CpSharding sharding,
                                                   std::int64_t heads, std::int64_t kv_heads) {
  switch (variant) {
    case CpAttention::ring: return std::make_unique<RingAttention>(cp, sharding);
    case CpAttention::all_gather: return std::make_unique<KvGatherAttention>(cp, sharding);
    case CpAttention::all_to_all:
      check_head_split(cp.size(), heads, kv_heads);
      return std::make_unique<UlyssesAttention>(cp, sharding);
  }
  throw Error("make_cp_attention: unknown variant");
}

void check_head_split(int cp, std::int64_t heads, std::int64_t kv_heads, const std::string& per) {
  if (heads % cp != 0 || kv_heads % cp != 0)
    throw UsageError("the all-to-all attention gives each of the cp = " + std::to_string(cp) +
                     " ranks a share of the heads: cp must divide the number of heads (" + std::to_string(heads) +
                     per + ") and of kv heads (" + std::to_string(kv_heads) + ")");
}

std::vector<Block> CpAttentionBase::all_visible_blocks() const {
  const int W = cp_.size(), rank = cp_.rank();
  std::vector<Block> blocks;
  for (int qc : rank_chunks(sharding_, W, rank))
    for (int w = 0; w < W; ++w)
      for (int kc : rank_chunks(sharding_, W, w))
        if (kc <= qc) blocks.push_back({qc, kc, kc == qc});
  return blocks;
}

}  // namespace usp::ch07
