// TEMPORARY (branch ch07-trainer only; deleted before the branch is handed over): minimal stand-ins
// for what the "ring" helper writes (solutions/07_context_parallel/cp_layout.cpp,
// chapters/07_context_parallel/cp_attention.cpp), so that the trainer, the all-gather attention
// and the tests build and run here before the two branches merge. The ring and all-to-all
// variants are not stood in: make_cp_attention throws NotImplemented for them.
#include <memory>
#include <string>

#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/07_context_parallel/cp_layout.hpp"
#include "chapters/07_context_parallel/kv_gather_attention.hpp"
#include "common/error.hpp"

namespace usp::ch07 {

const char* sharding_name(CpSharding s) { return s == CpSharding::contiguous ? "contiguous" : "zig-zag"; }
int chunk_count(CpSharding s, int world) { return s == CpSharding::contiguous ? world : 2 * world; }
std::vector<int> rank_chunks(CpSharding s, int world, int rank) {
  if (s == CpSharding::contiguous) return {rank};
  return {rank, 2 * world - 1 - rank};
}
std::vector<std::int32_t> rank_positions(CpSharding s, std::int64_t seq, int world, int rank) {
  const int chunks = chunk_count(s, world);
  USP_CHECK(seq % chunks == 0, "stand-in rank_positions: seq not divisible");
  const std::int64_t n = seq / chunks;
  std::vector<std::int32_t> out;
  for (int c : rank_chunks(s, world, rank))
    for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<std::int32_t>(c * n + i));
  return out;
}
std::vector<Block> ring_step_blocks(CpSharding s, int world, int rank, int step) {
  const int src = ((rank - step) % world + world) % world;
  std::vector<Block> out;
  for (int q : rank_chunks(s, world, rank))
    for (int k : rank_chunks(s, world, src))
      if (k <= q) out.push_back({q, k, k == q});
  return out;
}

const char* attention_name(CpAttention a) {
  return a == CpAttention::ring ? "ring" : a == CpAttention::all_gather ? "all-gather" : "all-to-all";
}
std::int64_t AttentionWork::blocks() const {
  std::int64_t n = 0;
  for (const auto& s : blocks_per_step) n += static_cast<std::int64_t>(s.size());
  return n;
}
CpAttentionBase::CpAttentionBase(Communicator& cp, CpSharding sharding) : cp_(cp), sharding_(sharding) {}
const Tensor& CpAttentionBase::positions(std::int64_t tokens) const {
  if (!positions_.defined() || positions_.numel() != tokens) {
    const auto p = rank_positions(sharding_, tokens * cp_.size(), cp_.size(), cp_.rank());
    positions_ = Tensor::empty({tokens}, DType::i32, MemCategory::Parameter);
    for (std::int64_t i = 0; i < tokens; ++i) positions_.data<std::int32_t>()[i] = p[static_cast<std::size_t>(i)];
  }
  return positions_;
}
std::unique_ptr<CpAttentionBase> make_cp_attention(CpAttention variant, Communicator& cp, CpSharding sharding,
                                                   std::int64_t, std::int64_t) {
  if (variant == CpAttention::all_gather) return std::make_unique<KvGatherAttention>(cp, sharding);
  throw NotImplemented(std::string("stand-in: ") + attention_name(variant) + " attention (the ring helper's)");
}

}  // namespace usp::ch07
