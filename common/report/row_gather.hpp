// Every rank's row of a report, gathered on every rank as the type it was sent as: no numbers
// bit-cast into integers, no fields packed by position.
//
//   struct Held { std::int64_t params, peak_bytes; double step_ms; };  // trivially copyable
//   std::vector<Held> all = report::gather_rows(metrics, Held{...});    // all[r]: rank r's row
//   auto ops = report::gather_row_lists(pp, my_ops);                    // ops[r][i]: lists of any length
//   report::add_every_rank_row(metrics, table, {label, std::int64_t{rank}, seconds});  // a Table's row
//
// A row is a trivially copyable struct (numbers, enums, fixed arrays; no strings or pointers); it
// travels as its bytes in one all_gather (gather_row_lists: one for the lengths, one for the
// lists padded to the longest). Collective over comm, on every rank; on a communicator of device
// memory the bytes go through its device. The traffic adds to comm's byte counters like any
// collective's: read the counters a report shows before gathering, or gather over a communicator
// of its own (the chapters' `metrics`).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/report/table.hpp"

namespace usp::report {

// `bytes` bytes from every rank, rank r's at [r * bytes, (r + 1) * bytes).
std::vector<std::byte> gather_bytes(Communicator& comm, const void* mine, std::size_t bytes);

template <class Row>
std::vector<Row> gather_rows(Communicator& comm, const Row& mine) {
  static_assert(std::is_trivially_copyable_v<Row>, "gather_rows: a row travels as its bytes");
  const std::vector<std::byte> all = gather_bytes(comm, &mine, sizeof(Row));
  std::vector<Row> rows(static_cast<std::size_t>(comm.size()));
  std::memcpy(rows.data(), all.data(), all.size());
  return rows;
}

template <class Row>
std::vector<std::vector<Row>> gather_row_lists(Communicator& comm, const std::vector<Row>& mine) {
  static_assert(std::is_trivially_copyable_v<Row>, "gather_row_lists: a row travels as its bytes");
  const std::vector<std::int64_t> lengths = gather_rows(comm, static_cast<std::int64_t>(mine.size()));
  const auto longest = static_cast<std::size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<Row> padded = mine;
  padded.resize(longest);
  const std::vector<std::byte> all = gather_bytes(comm, padded.data(), longest * sizeof(Row));
  std::vector<std::vector<Row>> lists(lengths.size());
  for (std::size_t r = 0; r < lists.size(); ++r) {
    lists[r].resize(static_cast<std::size_t>(lengths[r]));
    if (!lists[r].empty())
      std::memcpy(lists[r].data(), all.data() + r * longest * sizeof(Row), lists[r].size() * sizeof(Row));
  }
  return lists;
}

// A report::Table's row from every rank, added to `table` in rank order (rank r's row becomes row
// rows() + r). Every cell travels as the kind it is (integer, number, text, flag, list of
// numbers), so a rank's row is written once, as the table shows it. Collective over comm; every
// rank's row has the table's columns, and every rank's table gets every row.
void add_every_rank_row(Communicator& comm, Table& table, const std::vector<Value>& mine);

}  // namespace usp::report
