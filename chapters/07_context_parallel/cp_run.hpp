// One CP variant (an attention and a layout of the tokens) trained for a few steps on the run's
// ranks and measured: the losses, the work each rank's attention did (its blocks of the causal
// mask and its compute time), this rank's memory by category and the peak of one attention
// forward, the bytes it sent per collective (next to the count), the step times, the final
// parameters (to compare variants), and for a traced variant how much of its attention's
// communication the rank hid behind computing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/cp_formulas.hpp"
#include "chapters/07_context_parallel/cp_trainer.hpp"
#include "common/data/dataset.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/variant_numbers.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch07 {

struct Variant {
  CpLayout layout;
  std::int64_t micro_batches = 1;  // per replica and step
  std::string trace_name;          // "trace_ring_zigzag": the last step's trace, <out>/<name>.{json,csv}
};

// "ring_zigzag", "all_gather_contiguous": the variant's name in file names.
std::string variant_name(const CpLayout& layout);

struct VariantResult {
  Variant variant;
  int cp_rank = 0, dp_rank = 0, dp_cp_rank = 0;
  std::vector<double> losses;          // the global mean loss per step (the runner's)
  RankMemory memory;                   // this rank's after the last step; the peaks over the steps
  std::int64_t attention_peak = 0;     // one attention forward's peak Temporary (attention_forward_peak)
  std::int64_t kv_formula = 0;         // attention_kv_bytes
  std::int64_t kv_measured = 0;        // one attention forward's peak CommBuffer: the K/V it received
  CommStats cp_comm, dp_cp_comm;       // this rank, all steps
  CommCount counted;                   // per step
  std::vector<double> step_seconds;    // this rank's (the runner's)
  std::vector<double> attention_seconds;  // per step: the attention's forward compute (AttentionWork)
  std::vector<std::vector<Block>> blocks_per_step;  // the last forward's (AttentionWork)
  double hidden = -1;                  // traced variants: hidden_fraction of its attention's comm
  std::vector<float> parameters;       // the final parameters (every rank holds them all)
  std::vector<std::int64_t> val_steps;  // --eval-every: the steps after which ...
  std::vector<double> val_losses;       // ... the held-out loss was evaluated, and that loss

  double median_step_seconds() const;
  double median_attention_seconds() const;
};

// Trains cfg.steps steps of the variant on world's ranks through `runner` (the steps, their
// times, the traced last step, the losses' mean over its metrics communicator: variant_runner.hpp),
// so that the trainer's groups count exactly what the variant communicates.
// With eval_batches > 0, the variant has the runner's validation hook (--eval-every): the held-out
// loss in the layout itself, each cp rank evaluating its tokens of its replica's held-out batches
// (dp_rank, dp_rank + dp, ...: validation_loss.hpp) through the context-parallel attention, the
// batch's loss the mean over the cp ranks (they hold as many tokens), over groups of the metrics
// communicator. The attention's traffic is taken out of cp_comm (held_out_traffic.hpp), its memory
// out of the peaks, its work out of blocks_per_step.
VariantResult run_variant(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                          const Variant& variant, std::int64_t eval_batches = 0);

// The bytes of `category` one attention forward holds at its peak above what was held when it
// began, on q [B, T, H, D], k, v [B, T, G, D] (collective over the attention's group): Temporary
// for its scratch, CommBuffer for the other ranks' K/V it holds (the all-gather's gathered K/V,
// the ring's blocks in flight). It runs the forward twice and measures the second (the first
// builds what the variant keeps between calls), and restarts the tracker's peaks.
std::int64_t attention_forward_peak(CpAttentionBase& attention, const Tensor& q, const Tensor& k, const Tensor& v,
                                    MemCategory category = MemCategory::Temporary);

// The names of the "comm" spans of a variant's attention traffic: send and recv (ring),
// all_gather and reduce_scatter, all_to_all.
std::vector<std::string> attention_comm_ops(CpAttention attention);

}  // namespace usp::ch07
