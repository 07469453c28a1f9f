// The three ways chapter 07 computes attention over a sequence split across the W ranks of a
// context-parallel group (each an AttentionHook for the model: common/model/attention_hook.hpp).
//   ring       K/V blocks travel around the ring of ranks; each rank computes its queries
//              against the block it holds while the next one arrives (asynchronous send/recv),
//              and merges the partial results by their log-sum-exp (exercise 07.1). Backward
//              sends the blocks around again, with their dK/dV accumulating on the way, one more
//              hop bringing them home. Holds 2 K/V blocks at a time.
//   all-gather every rank gathers the whole sequence's K/V, then computes its queries against it
//              in one block (Llama 3's choice); backward reduce-scatters dK/dV to their owners.
//              Holds all W blocks; communication cannot overlap the attention it feeds.
//   all-to-all (DeepSpeed-Ulysses) an all-to-all swaps the token split for a head split: each
//              rank gets every token of H/W query heads (and G/W kv heads), computes ordinary
//              attention on them, and a second all-to-all swaps back. Needs W to divide both head
//              counts.
// Every variant works with either layout of the tokens (cp_layout.hpp, exercise 07.2), and
// computes the same attention as one device on the whole sequence.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/cp_layout.hpp"
#include "common/comm/communicator.hpp"
#include "common/enum_names.hpp"
#include "common/model/attention_hook.hpp"

namespace usp::ch07 {

enum class CpAttention : unsigned char { ring, all_gather, all_to_all };
inline constexpr EnumNames<CpAttention, 3> kCpAttentionNames{{{{CpAttention::ring, "ring"},
                                                              {CpAttention::all_gather, "all-gather"},
                                                              {CpAttention::all_to_all, "all-to-all"}}}};
inline const char* attention_name(CpAttention a) { return kCpAttentionNames.name(a); }

// What one rank's attention did in the last forward (for the chapter's per-rank report and the
// mask figure): the blocks it computed at each ring step (the all-gather and all-to-all
// variants: one step), and the time it spent computing attention.
struct AttentionWork {
  std::vector<std::vector<Block>> blocks_per_step;  // [step] -> the blocks computed
  double compute_seconds = 0;                       // forward attention compute, all layers
  std::int64_t blocks() const;                      // the total (diagonal blocks count as 1)
};

class CpAttentionBase : public AttentionHook {
 public:
  // cp: the context-parallel group (rank order = the layout's rank order).
  CpAttentionBase(Communicator& cp, CpSharding sharding);
  const Tensor& positions(std::int64_t tokens) const override;
  // The positions of every rank's tokens, rank after rank ([W·T] i32): the order of K/V gathered
  // from every rank (all-gather) or of every token of a head (all-to-all).
  const Tensor& gathered_positions(std::int64_t tokens) const;
  Communicator& comm() const { return cp_; }
  CpSharding sharding() const { return sharding_; }
  const AttentionWork& work() const { return work_; }
  void reset_work() { work_ = {}; }
  // The blocks of the causal mask a rank computes when it sees every key at once (all-gather,
  // all-to-all): each of its query chunks against every visible key chunk of every rank, in the
  // gathered order (rank after rank, each rank's chunks in its storage order).
  std::vector<Block> all_visible_blocks() const;

 protected:
  Communicator& cp_;
  CpSharding sharding_;
  AttentionWork work_;
  mutable Tensor positions_;      // [T] i32, built for the T asked for
  mutable Tensor all_positions_;  // [W·T] i32
};

// The variant's implementation; UsageError for all-to-all when W does not divide the heads.
std::unique_ptr<CpAttentionBase> make_cp_attention(CpAttention variant, Communicator& cp, CpSharding sharding,
                                                   std::int64_t heads, std::int64_t kv_heads);
// That UsageError, unless cp divides both head counts (`per` after the counts in its message: "",
// " per TP rank").
void check_head_split(int cp, std::int64_t heads, std::int64_t kv_heads, const std::string& per = "");

// Runs `compute`, an attention's own arithmetic, as the trace span `name` on the compute lane,
// `device` synchronised at its end (on a GPU: the kernels, not their launches); its seconds.
double traced_seconds(const std::string& name, Device device, const std::function<void()>& compute);

// positions [n] i32 on `device`: batch data, like the tokens themselves (a Temporary).
Tensor positions_on(const std::vector<std::int32_t>& positions, Device device);

}  // namespace usp::ch07
