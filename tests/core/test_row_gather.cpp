// report::gather_rows / gather_row_lists: every rank's row arrives on every rank as the struct it
// sent, doubles bit for bit, lists of any length (an empty one included).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "common/report/row_gather.hpp"
#include "tests/support/test_world.hpp"

namespace {

struct Row {
  int rank = 0;
  double value = 0;        // a double that no integer cast would keep
  std::int64_t bytes = 0;  // beyond 32 bits
  char tag = 0;            // a size that is no multiple of 4 words once packed
};

}  // namespace

TEST_CASE("row gather: every rank's struct on every rank, as sent", "[core][report][mpi]") {
  usp::Communicator& w = usp::testing::world();
  const Row mine{w.rank(), 0.1 * (w.rank() + 1), (std::int64_t{1} << 40) + w.rank(), static_cast<char>('a' + w.rank())};
  const std::vector<Row> all = usp::report::gather_rows(w, mine);
  REQUIRE(static_cast<int>(all.size()) == w.size());
  for (int r = 0; r < w.size(); ++r) {
    CHECK(all[r].rank == r);
    CHECK(all[r].value == 0.1 * (r + 1));
    CHECK(all[r].bytes == (std::int64_t{1} << 40) + r);
    CHECK(all[r].tag == static_cast<char>('a' + r));
  }
  const std::vector<double> odd = usp::report::gather_rows(w, w.rank() == 0 ? std::nan("") : -0.0);
  CHECK(std::isnan(odd[0]));
  for (int r = 1; r < w.size(); ++r) CHECK(std::signbit(odd[r]));
}

TEST_CASE("row gather: lists of different lengths keep their lengths", "[core][report][mpi]") {
  usp::Communicator& w = usp::testing::world();
  std::vector<Row> mine;  // rank r sends r rows: rank 0 none
  for (int i = 0; i < w.rank(); ++i) mine.push_back({i, 1.5 * i, i, 'x'});
  const std::vector<std::vector<Row>> all = usp::report::gather_row_lists(w, mine);
  REQUIRE(static_cast<int>(all.size()) == w.size());
  for (int r = 0; r < w.size(); ++r) {
    REQUIRE(static_cast<int>(all[r].size()) == r);
    for (int i = 0; i < r; ++i) CHECK((all[r][i].rank == i && all[r][i].value == 1.5 * i && all[r][i].tag == 'x'));
  }
}

TEST_CASE("row gather: a table's row from every rank, each cell the kind it was", "[core][report][mpi]") {
  using usp::report::Value;
  usp::Communicator& w = usp::testing::world();
  usp::report::Table t({{.key = "label"}, {.key = "rank"}, {.key = "seconds"}, {.key = "ok"}, {.key = "losses"}});
  t.add({std::string("before"), std::int64_t{-1}, 0.0, false, std::vector<double>{}});  // rows already there stay
  // Rank r: a text of r characters (rank 0's empty), an integer beyond 32 bits, a double no
  // integer keeps, a flag, a list of r numbers.
  const int r = w.rank();
  std::vector<double> losses;
  for (int i = 0; i < r; ++i) losses.push_back(0.1 * i - 1e-300);
  usp::report::add_every_rank_row(w, t, {std::string(static_cast<std::size_t>(r), 'x'),
                                          (std::int64_t{1} << 40) + r, 0.1 * (r + 1), r % 2 == 1, losses});
  REQUIRE(t.rows() == static_cast<std::size_t>(w.size()) + 1);
  for (int k = 0; k < w.size(); ++k) {
    const std::size_t row = static_cast<std::size_t>(k) + 1;
    INFO("rank " << r << ", rank " << k << "'s row");
    CHECK(std::get<std::string>(t.at(row, "label")) == std::string(static_cast<std::size_t>(k), 'x'));
    CHECK(std::get<std::int64_t>(t.at(row, "rank")) == (std::int64_t{1} << 40) + k);
    CHECK(std::get<double>(t.at(row, "seconds")) == 0.1 * (k + 1));
    CHECK(std::get<bool>(t.at(row, "ok")) == (k % 2 == 1));
    const auto& got = std::get<std::vector<double>>(t.at(row, "losses"));
    REQUIRE(got.size() == static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) CHECK(got[static_cast<std::size_t>(i)] == 0.1 * i - 1e-300);
  }
}
