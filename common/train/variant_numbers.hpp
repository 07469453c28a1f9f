// What every rank contributes to a side-by-side chapter's table of variants (05, 06, 07), named
// once: its memory by category, and each of its communication groups' traffic next to the
// count of what the variant should send.
//
//   memory:  peak_parameter .. peak_temporary, peak_total, resident_parameter .. resident_optimizer_state
//   traffic: <what>_<group>_<op>, what = sent | counted | calls | counted_calls (per step: the
//            communicator's bytes and calls, then the count's), each group's ops in turn:
//            sent_tp_all_reduce, sent_tp_reduce_scatter, .., sent_dp_all_reduce, counted_tp_...
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/memory_tracker.hpp"
#include "common/report/table.hpp"

namespace usp {

// Which categories a row holds: all of them (peaks), or the state a trainer keeps between steps
// (parameters, gradients, optimizer state).
enum class MemColumns { all, state };
std::vector<MemCategory> mem_categories(MemColumns which);  // in MemCategory's order

// One column `<prefix><category>` per category, in MemCategory's order ("peak_", "resident_").
void add_memory_columns(std::vector<report::Column>& columns, const std::string& prefix, MemColumns which);
// The values of those columns: counts[category], in the same order.
void add_memory_values(std::vector<report::Value>& row, const MemCounts& counts, MemColumns which);

// This rank's tracked memory at the end of a variant's steps.
struct RankMemory {
  MemCounts resident;           // what the trainer keeps between steps
  MemCounts peak;               // each category's peak since the tracker's last reset_peak
  std::int64_t peak_total = 0;  // the peak of the total (not the sum of the peaks)
};
// Read once every group has let go of its collectives' buffers: the communicator's progress
// thread lets them go just after an op completes, and an op queued behind them (a barrier on
// each group, in turn) completes only once they are gone, so the tracker then shows exactly
// the state the trainer keeps. Collective over each group.
RankMemory settled_memory(const std::vector<Communicator*>& groups);
// The columns peak_<category> (all), peak_total, resident_<category> (state), and their values.
void add_rank_memory_columns(std::vector<report::Column>& columns);
void add_rank_memory_values(std::vector<report::Value>& row, const RankMemory& m);

// The ops a group's columns show, and its name in them ("tp", "dp_cp").
struct GroupOps {
  std::string group;
  std::vector<CommOp> ops;
};

// A group's traffic on this rank: what its communicator counted over all the steps, and the
// count per step (bytes and calls per op).
struct GroupTraffic {
  const CommStats& measured;
  const std::array<std::uint64_t, kNumCommOps>& bytes;
  const std::array<std::uint64_t, kNumCommOps>& calls;
};

std::string traffic_key(const std::string& what, const std::string& group, CommOp op);  // "sent_tp_all_gather"
// The columns of every group's ops, for what = sent, counted, calls, counted_calls in turn.
void add_traffic_columns(std::vector<report::Column>& columns, const std::vector<GroupOps>& groups);
// Their values: traffic[g] is groups[g]'s; the measured bytes and calls divided by `steps`.
void add_traffic_values(std::vector<report::Value>& row, const std::vector<GroupOps>& groups,
                        const std::vector<GroupTraffic>& traffic, std::int64_t steps);
// Whether every group sent exactly steps × its count, bytes and calls of every op (not only the
// ones its columns show, and over all steps: per step would round).
bool traffic_matches_count(const std::vector<GroupTraffic>& traffic, std::int64_t steps);

}  // namespace usp
