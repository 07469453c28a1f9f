#include "chapters/07_context_parallel/cp_attention.hpp"

#include "chapters/07_context_parallel/kv_gather_attention.hpp"
#include "chapters/07_context_parallel/ring_attention.hpp"
#include "chapters/07_context_parallel/ulysses_attention.hpp"
#include "common/error.hpp"

namespace usp::ch07 {

const char* attention_name(CpAttention a) {
  switch (a) {
    case CpAttention::ring: return "ring";
    case CpAttention::all_gather: return "all-gather";
    case CpAttention::all_to_all: return "all-to-all";
  }
  return "?";
}

std::int64_t AttentionWork::blocks() const {
  std::int64_t n = 0;
  for (const auto& step : blocks_per_step) n += static_cast<std::int64_t>(step.size());
  return n;
}

CpAttentionBase::CpAttentionBase(Communicator& cp, CpSharding sharding) : cp_(cp), sharding_(sharding) {}

const Tensor& CpAttentionBase::positions(std::int64_t tokens) const {
  if (!positions_.defined() || positions_.numel() != tokens) {
    // Batch data, like the tokens themselves: a Temporary (not model memory).
    const std::vector<std::int32_t> p = rank_positions(sharding_, tokens * cp_.size(), cp_.size(), cp_.rank());
    Tensor host = Tensor::empty({tokens}, DType::i32, MemCategory::Temporary);
    std::copy(p.begin(), p.end(), host.data<std::int32_t>());
    positions_ = on_device(host, cp_.device());
  }
  return positions_;
}

const Tensor& CpAttentionBase::gathered_positions(std::int64_t tokens) const {
  const int W = cp_.size();
  if (!all_positions_.defined() || all_positions_.numel() != W * tokens) {
    Tensor host = Tensor::empty({W * tokens}, DType::i32, MemCategory::Temporary);  // batch data
    std::int32_t* p = host.data<std::int32_t>();
    for (int w = 0; w < W; ++w)
      for (std::int32_t pos : rank_positions(sharding_, W * tokens, W, w)) *p++ = pos;
    all_positions_ = on_device(host, cp_.device());
  }
  return all_positions_;
}

std::unique_ptr<CpAttentionBase> make_cp_attention(CpAttention variant, Communicator& cp, CpSharding sharding,
                                                   std::int64_t heads, std::int64_t kv_heads) {
  switch (variant) {
    case CpAttention::ring: return std::make_unique<RingAttention>(cp, sharding);
    case CpAttention::all_gather: return std::make_unique<KvGatherAttention>(cp, sharding);
    case CpAttention::all_to_all:
      if (heads % cp.size() != 0 || kv_heads % cp.size() != 0)
        throw UsageError("the all-to-all attention gives each of the cp = " + std::to_string(cp.size()) +
                         " ranks a share of the heads: cp must divide the number of heads (" + std::to_string(heads) +
                         ") and of kv heads (" + std::to_string(kv_heads) + ")");
      return std::make_unique<UlyssesAttention>(cp, sharding);
  }
  throw Error("make_cp_attention: unknown variant");
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
