// A chapter's results as one table: a list of columns and rows of values, shown three ways from
// the one column list:
//   print      the terminal table (rank 0's log): each column's printf format, header above
//   write_csv  a CSV file (header = the columns' keys), written atomically (output_file.hpp)
//   write_json an array of objects for summary.json (keys = the columns' keys)
// A column says where it appears: on the terminal when it has a format, in the CSV and the JSON
// unless told otherwise. So a number shown in MiB on the terminal and kept in bytes in the files
// is one column with a scale, and a quantity the files name differently is two columns.
//
//   Table t({{.key = "mode", .header = "mode", .format = "%-10s"},
//            {.key = "peak_bytes", .header = "peak MiB", .format = " %9.2f", .scale = 1.0 / 1048576}});
//   t.add({"naive", std::int64_t{2873344}});
//   t.print(std::cout);                 // "  mode        peak MiB"
//                                       // "  naive           2.74"
//   t.write_csv(dir + "/variants.csv"); // mode,peak_bytes / naive,2873344
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "common/json.hpp"

namespace usp::report {

// One cell. The JSON writes each kind as itself; a list of numbers (a run's losses) only in JSON.
using Value = std::variant<std::int64_t, double, std::string, bool, std::vector<double>>;

struct Column {
  std::string key = "";     // the CSV header and the JSON key
  std::string header = "";  // the terminal header, aligned like the cell below it
  // printf format of the terminal cell, its separator from the previous column included
  // (" %10.3f", " %7.1f%%", "  %-13.7f"); one conversion: d/lld (integers), f/g/e (numbers,
  // integers converted), s (text). Empty: not on the terminal.
  std::string format = "";
  bool csv = true;            // in write_csv
  bool json = true;           // in write_json
  double scale = 1;           // terminal only: numbers are multiplied by it (bytes -> MiB)
  // printf format of a number in the CSV (""  = as std::ostream writes the value); a text cell (an
  // empty field where a row has no value) is written as it is.
  std::string csv_format = "";
  // Terminal only: the text shown through a %s format instead of the value (a mark, "-").
  std::function<std::string(const Value&)> text = nullptr;
  int header_width = -1;  // the header's width; -1: the cell's (conversion width + literal suffix)
};

class Table {
 public:
  // indent starts every terminal line; header_indent the header line ("" = indent).
  explicit Table(std::vector<Column> columns, std::string indent = "  ", std::string header_indent = "");

  // One value per column, in the columns' order.
  Table& add(std::vector<Value> row);
  std::size_t rows() const { return rows_.size(); }
  const Value& at(std::size_t row, const std::string& key) const;

  // The terminal table: header line, then one line per row.
  void print(std::ostream& out) const;
  void print_header(std::ostream& out) const;
  void print_row(std::ostream& out, std::size_t row) const;  // for a table printed as it fills

  std::string csv() const;
  void write_csv(const std::string& path) const;  // write_file_atomic

  // [{key: value, ...}, ...] of the JSON columns; write_json_fields: one row's fields, inside an
  // object the caller opened.
  void write_json(JsonWriter& j) const;
  void write_json_fields(JsonWriter& j, std::size_t row) const;
  // The terminal table, and the same rows into summary.json's object under `key` (chapters 12-14).
  void print_and_write_json(std::ostream& out, const std::string& key, JsonWriter& j) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Value>> rows_;
  std::string indent_, header_indent_;
};

}  // namespace usp::report
