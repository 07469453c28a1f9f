#include "common/train/variant_numbers.hpp"

namespace usp {

namespace {

constexpr MemCategory kAll[] = {MemCategory::Parameter,  MemCategory::Gradient,   MemCategory::OptimizerState,
                                MemCategory::Activation, MemCategory::CommBuffer, MemCategory::Temporary};
constexpr MemCategory kState[] = {MemCategory::Parameter, MemCategory::Gradient, MemCategory::OptimizerState};

constexpr const char* kWhat[] = {"sent", "counted", "calls", "counted_calls"};

}  // namespace

std::vector<MemCategory> mem_categories(MemColumns which) {
  if (which == MemColumns::state) return {std::begin(kState), std::end(kState)};
  return {std::begin(kAll), std::end(kAll)};
}

void add_memory_columns(std::vector<report::Column>& columns, const std::string& prefix, MemColumns which) {
  for (MemCategory m : mem_categories(which)) columns.push_back({.key = prefix + mem_category_name(m)});
}

void add_memory_values(std::vector<report::Value>& row, const MemCounts& counts, MemColumns which) {
  for (MemCategory m : mem_categories(which)) row.emplace_back(counts[m]);
}

RankMemory settled_memory(const std::vector<Communicator*>& groups) {
  for (Communicator* g : groups) g->barrier();
  const MemoryTracker& tracker = MemoryTracker::instance();
  return {tracker.current(), tracker.peak(), tracker.peak_total()};
}

void add_rank_memory_columns(std::vector<report::Column>& columns) {
  add_memory_columns(columns, "peak_", MemColumns::all);
  columns.push_back({.key = "peak_total"});
  add_memory_columns(columns, "resident_", MemColumns::state);
}

void add_rank_memory_values(std::vector<report::Value>& row, const RankMemory& m) {
  add_memory_values(row, m.peak, MemColumns::all);
  row.emplace_back(m.peak_total);
  add_memory_values(row, m.resident, MemColumns::state);
}

std::string traffic_key(const std::string& what, const std::string& group, CommOp op) {
  return what + "_" + group + "_" + comm_op_name(op);
}

void add_traffic_columns(std::vector<report::Column>& columns, const std::vector<GroupOps>& groups) {
  for (const char* what : kWhat)
    for (const GroupOps& g : groups)
      for (CommOp op : g.ops) columns.push_back({.key = traffic_key(what, g.group, op)});
}

void add_traffic_values(std::vector<report::Value>& row, const std::vector<GroupOps>& groups,
                        const std::vector<GroupTraffic>& traffic, std::int64_t steps) {
  for (int what = 0; what < 4; ++what)  // kWhat's order: measured bytes, counted, measured calls, counted
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (CommOp op : groups[g].ops) {
        const GroupTraffic& t = traffic[g];
        const auto i = static_cast<std::size_t>(op);
        const std::uint64_t x = what == 0 ? t.measured.sent(op) : what == 1 ? t.bytes[i]
                                : what == 2 ? t.measured.count(op) : t.calls[i];
        // The measured numbers are over all steps; the counts per step.
        row.emplace_back(static_cast<std::int64_t>(x) / (what % 2 == 0 ? steps : 1));
      }
}

bool traffic_matches_count(const std::vector<GroupTraffic>& traffic, std::int64_t steps) {
  const auto s = static_cast<std::uint64_t>(steps);
  for (const GroupTraffic& t : traffic)
    for (std::size_t op = 0; op < static_cast<std::size_t>(kNumCommOps); ++op)
      if (t.measured.bytes_sent[op] != s * t.bytes[op] || t.measured.calls[op] != s * t.calls[op]) return false;
  return true;
}

}  // namespace usp
