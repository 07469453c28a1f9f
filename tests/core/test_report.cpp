// The report table: one column list gives the terminal table, the CSV and the JSON rows.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/report/median.hpp"
#include "common/report/table.hpp"

using usp::report::Column;
using usp::report::Table;
using usp::report::Value;

namespace {

Table variants() {
  Table t({{.key = "mode", .header = "variant", .format = "%-8s"},
           {.key = "steps", .header = "", .csv = false},
           {.key = "bytes", .header = "bytes", .format = " %8lld", .json = false},
           {.key = "peak_bytes", .header = "peak MiB", .format = " %9.2f", .scale = 1.0 / 1048576},
           {.key = "hidden_fraction", .header = "hidden", .format = " %5.1f%%", .scale = 100, .csv_format = "%.3f"},
           {.key = "losses", .header = "", .csv = false},
           {.key = "ok", .header = "", .format = "%s", .json = false,
            .text = [](const Value& v) { return std::get<bool>(v) ? std::string() : std::string("  WRONG"); }}});
  t.add({"naive", std::int64_t{3}, std::int64_t{1024}, std::int64_t{3 << 20}, 0.25, std::vector<double>{2.5, 2.0}, true});
  t.add({"overlap", std::int64_t{3}, std::int64_t{96}, std::int64_t{1 << 19}, 0.5, std::vector<double>{2.5}, false});
  return t;
}

}  // namespace

TEST_CASE("report table: the terminal lines follow each column's printf format", "[report]") {
  std::ostringstream out;
  variants().print(out);
  // Each header is as wide as its cells: conversion width plus the literal after it ("%").
  CHECK(out.str() ==
        "  variant     bytes  peak MiB hidden\n"
        "  naive        1024      3.00  25.0%\n"
        "  overlap        96      0.50  50.0%  WRONG\n");
}

TEST_CASE("report table: header indent and width can differ from the rows'", "[report]") {
  Table t({{.key = "bytes", .header = "size", .format = "%6lld"},
           {.key = "mib", .header = "MiB", .format = " %5.1f MiB", .header_width = 5}},
          "  ", "# ");
  t.add({std::int64_t{64}, 2.0});
  std::ostringstream out;
  t.print(out);
  CHECK(out.str() == "#   size   MiB\n      64   2.0 MiB\n");
}

TEST_CASE("report table: the CSV holds the CSV columns, the JSON the JSON columns", "[report]") {
  const Table t = variants();
  CHECK(t.csv() ==
        "mode,bytes,peak_bytes,hidden_fraction,ok\n"
        "naive,1024,3145728,0.250,1\n"
        "overlap,96,524288,0.500,0\n");
  usp::JsonWriter j;
  t.write_json(j);
  CHECK(j.str() ==
        "[{\"mode\":\"naive\",\"steps\":3,\"peak_bytes\":3145728,\"hidden_fraction\":0.25,\"losses\":[2.5,2.0]},"
        "{\"mode\":\"overlap\",\"steps\":3,\"peak_bytes\":524288,\"hidden_fraction\":0.5,\"losses\":[2.5]}]");
  CHECK(std::get<std::int64_t>(t.at(1, "bytes")) == 96);
  CHECK_THROWS_AS(t.at(0, "nope"), usp::Error);

  const std::string path = "test_report_variants.csv";
  t.write_csv(path);
  std::ifstream in(path);
  std::stringstream written;
  written << in.rdbuf();
  CHECK(written.str() == t.csv());
  std::remove(path.c_str());
}

TEST_CASE("report table: wrong rows and formats are errors, not garbled text", "[report]") {
  Table t({{.key = "a", .header = "a", .format = " %5lld"}});
  CHECK_THROWS_AS(t.add({std::int64_t{1}, std::int64_t{2}}), usp::Error);  // two values, one column
  t.add({2.5});                                                               // a double under %lld
  std::ostringstream out;
  CHECK_THROWS_AS(t.print(out), usp::Error);
  using Columns = std::vector<Column>;
  CHECK_THROWS_AS(Table(Columns{{.key = "b", .header = "b", .format = " %5"}}), usp::Error);
  CHECK_THROWS_AS(Table(Columns{{.key = "c", .header = "c", .format = " %5d %5d"}}), usp::Error);
  Table lists(Columns{{.key = "l", .header = "l"}});
  lists.add({std::vector<double>{1.0}});
  CHECK_THROWS_AS(lists.csv(), usp::Error);  // a list has no CSV form
}

TEST_CASE("report table: a text cell under a CSV number format is written as it is", "[report]") {
  Table t({{.key = "model"}, {.key = "mfu", .csv_format = "%.3f"}});
  t.add({"8b", 0.41234});
  t.add({"80b", std::string()});  // nothing fits: an empty field
  CHECK(t.csv() == "model,mfu\n8b,0.412\n80b,\n");
}

TEST_CASE("report median: the middle value, the mean of the two middle ones for an even count", "[report]") {
  CHECK(usp::report::median({3.0}) == 3.0);
  CHECK(usp::report::median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(usp::report::median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // not the upper median, 3
  CHECK_THROWS_AS(usp::report::median({}), usp::Error);
}
