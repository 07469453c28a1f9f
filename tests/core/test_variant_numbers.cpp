// The columns every rank contributes to chapters 05-07's tables of variants, and the check of a
// group's traffic against its count (common/train/variant_numbers.hpp).
#include <catch2/catch.hpp>

#include "common/train/variant_numbers.hpp"

using namespace usp;

namespace {

std::vector<std::string> keys(const std::vector<report::Column>& columns) {
  std::vector<std::string> k;
  for (const report::Column& c : columns) k.push_back(c.key);
  return k;
}

// The cells, each of which must be an integer.
std::vector<std::int64_t> integers(const std::vector<report::Value>& row) {
  std::vector<std::int64_t> v;
  for (const report::Value& cell : row) v.push_back(std::get<std::int64_t>(cell));
  return v;
}

}  // namespace

TEST_CASE("variant numbers: the memory columns and values, in MemCategory's order", "[core]") {
  std::vector<report::Column> c;
  add_rank_memory_columns(c);
  CHECK(keys(c) == std::vector<std::string>{"peak_parameter", "peak_gradient", "peak_optimizer_state",
                                            "peak_activation", "peak_comm_buffer", "peak_temporary", "peak_total",
                                            "resident_parameter", "resident_gradient",
                                            "resident_optimizer_state"});
  RankMemory m;
  for (int i = 0; i < kNumMemCategories; ++i) {
    m.peak.bytes[static_cast<std::size_t>(i)] = 10 + i;
    m.resident.bytes[static_cast<std::size_t>(i)] = 20 + i;
  }
  m.peak_total = 99;
  std::vector<report::Value> v;
  add_rank_memory_values(v, m);
  CHECK(integers(v) == std::vector<std::int64_t>{10, 11, 12, 13, 14, 15, 99, 20, 21, 22});
}

TEST_CASE("variant numbers: a group's traffic per step next to its count, and the exact check", "[core]") {
  const std::vector<GroupOps> groups = {{"tp", {CommOp::all_reduce, CommOp::all_gather}}, {"dp", {CommOp::all_reduce}}};
  std::vector<report::Column> c;
  add_traffic_columns(c, groups);
  const std::vector<std::string> k = keys(c);
  REQUIRE(k.size() == 12);
  CHECK(k[0] == "sent_tp_all_reduce");
  CHECK(k[1] == "sent_tp_all_gather");
  CHECK(k[2] == "sent_dp_all_reduce");
  CHECK(k[3] == "counted_tp_all_reduce");
  CHECK(k[8] == "calls_dp_all_reduce");
  CHECK(k[11] == "counted_calls_dp_all_reduce");

  // Two steps: each step sends 100 bytes in 2 all-reduces and 40 in 1 all-gather on tp, 8 in 1
  // all-reduce on dp.
  const auto ar = static_cast<std::size_t>(CommOp::all_reduce), ag = static_cast<std::size_t>(CommOp::all_gather);
  CommStats tp, dp;
  tp.bytes_sent[ar] = 200, tp.calls[ar] = 4, tp.bytes_sent[ag] = 80, tp.calls[ag] = 2;
  dp.bytes_sent[ar] = 16, dp.calls[ar] = 2;
  std::array<std::uint64_t, kNumCommOps> tp_bytes{}, tp_calls{}, dp_bytes{}, dp_calls{};
  tp_bytes[ar] = 100, tp_calls[ar] = 2, tp_bytes[ag] = 40, tp_calls[ag] = 1;
  dp_bytes[ar] = 8, dp_calls[ar] = 1;
  const std::vector<GroupTraffic> traffic = {{tp, tp_bytes, tp_calls}, {dp, dp_bytes, dp_calls}};
  std::vector<report::Value> v;
  add_traffic_values(v, groups, traffic, 2);
  CHECK(integers(v) == std::vector<std::int64_t>{100, 40, 8, 100, 40, 8, 2, 1, 1, 2, 1, 1});
  CHECK(traffic_matches_count(traffic, 2));
  CHECK_FALSE(traffic_matches_count(traffic, 3));
  // An op no column shows still counts: one reduce-scatter nobody counted breaks the match.
  tp.calls[static_cast<std::size_t>(CommOp::reduce_scatter)] = 1;
  CHECK_FALSE(traffic_matches_count(traffic, 2));
  tp.calls[static_cast<std::size_t>(CommOp::reduce_scatter)] = 0;
  dp_calls[ar] = 2;  // the count says two calls a step, the communicator made one
  CHECK_FALSE(traffic_matches_count(traffic, 2));
}
