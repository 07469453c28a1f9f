#include "common/report/table.hpp"

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "common/error.hpp"
#include "common/io/output_file.hpp"

namespace usp::report {

namespace {

// A printf format with exactly one conversion, cut around it: prefix, "%<flags><width>[.prec]",
// the conversion letter, suffix (with "%%" turned into "%").
struct Format {
  std::string prefix, spec, suffix;
  char conversion = 's';
  int width = 0;
  bool left = false;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == '%') ++i;
  }
  return out;
}

Format parse_format(const std::string& fmt) {
  std::size_t at = 0;
  while ((at = fmt.find('%', at)) != std::string::npos && at + 1 < fmt.size() && fmt[at + 1] == '%') at += 2;
  USP_CHECK(at != std::string::npos, "report: format '" + fmt + "' has no conversion");
  Format f;
  f.prefix = unescape(fmt.substr(0, at));
  std::size_t i = at + 1;
  while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) f.left |= fmt[i++] == '-';
  const std::size_t width_at = i;
  while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) ++i;
  if (i > width_at) f.width = std::stoi(fmt.substr(width_at, i - width_at));
  if (i < fmt.size() && fmt[i] == '.') {
    ++i;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) ++i;
  }
  f.spec = fmt.substr(at, i - at);
  while (i < fmt.size() && (fmt[i] == 'l' || fmt[i] == 'z' || fmt[i] == 'h')) ++i;  // length: ours is fixed
  USP_CHECK(i < fmt.size() && std::string("dieEfFgGs").find(fmt[i]) != std::string::npos,
            "report: format '" + fmt + "' needs one of the conversions d, f, g, e, s");
  f.conversion = fmt[i];
  const std::string rest = fmt.substr(i + 1);
  f.suffix = unescape(rest);
  USP_CHECK(std::count(rest.begin(), rest.end(), '%') == 2 * std::count(f.suffix.begin(), f.suffix.end(), '%'),
            "report: format '" + fmt + "' has more than one conversion");
  return f;
}

std::string printf_text(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_text(const char* fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

double as_number(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  throw Error("report: a number column holds text or a list");
}

// One cell through a parsed format; scale applies to numbers.
std::string format_cell(const Format& f, const Value& v, double scale) {
  const std::string spec = f.spec;
  std::string body;
  switch (f.conversion) {
    case 'd':
    case 'i': {
      const auto* i = std::get_if<std::int64_t>(&v);
      USP_CHECK(i && scale == 1, "report: an integer format needs an unscaled integer value");
      body = printf_text((spec + "lld").c_str(), static_cast<long long>(*i));
      break;
    }
    case 's': {
      const auto* s = std::get_if<std::string>(&v);
      USP_CHECK(s, "report: a %s format needs a text value");
      body = printf_text((spec + "s").c_str(), s->c_str());
      break;
    }
    default: body = printf_text((spec + f.conversion).c_str(), as_number(v) * scale);
  }
  return f.prefix + body + f.suffix;
}

std::string csv_cell(const Column& c, const Value& v) {
  if (!c.csv_format.empty() && !std::holds_alternative<std::string>(v))
    return format_cell(parse_format(c.csv_format), v, 1);
  std::ostringstream ss;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<double>>)
          throw Error("report: column '" + c.key + "' holds a list, which has no CSV form");
        else
          ss << x;
      },
      v);
  return ss.str();
}

}  // namespace

Table::Table(std::vector<Column> columns, std::string indent, std::string header_indent)
    : columns_(std::move(columns)), indent_(std::move(indent)), header_indent_(std::move(header_indent)) {
  if (header_indent_.empty()) header_indent_ = indent_;
  for (const Column& c : columns_)
    if (!c.format.empty()) parse_format(c.format);  // a bad format fails here, not mid-table
}

Table& Table::add(std::vector<Value> row) {
  USP_CHECK(row.size() == columns_.size(), "report: a row of " + std::to_string(row.size()) + " values for " +
                                               std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(row));
  return *this;
}

const Value& Table::at(std::size_t row, const std::string& key) const {
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (columns_[c].key == key) return rows_.at(row)[c];
  throw Error("report: no column '" + key + "'");
}

void Table::print(std::ostream& out) const {
  print_header(out);
  for (std::size_t r = 0; r < rows_.size(); ++r) print_row(out, r);
}

void Table::print_and_write_json(std::ostream& out, const std::string& key, JsonWriter& j) const {
  print(out);
  j.key(key);
  write_json(j);
}

void Table::print_header(std::ostream& out) const {
  std::string line = header_indent_;
  for (const Column& c : columns_) {
    if (c.format.empty()) continue;
    const Format f = parse_format(c.format);
    const int width = c.header_width >= 0 ? c.header_width : f.width + static_cast<int>(f.suffix.size());
    line += f.prefix + printf_text(f.left ? "%-*s" : "%*s", width, c.header.c_str());
  }
  out << line << '\n';
}

void Table::print_row(std::ostream& out, std::size_t row) const {
  std::string line = indent_;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const Column& col = columns_[c];
    if (col.format.empty()) continue;
    const Value& v = rows_.at(row)[c];
    line += format_cell(parse_format(col.format), col.text ? Value(col.text(v)) : v, col.scale);
  }
  out << line << '\n' << std::flush;
}

std::string Table::csv() const {
  std::string text;
  for (const Column& c : columns_) {
    if (!c.csv) continue;
    if (!text.empty()) text += ',';
    text += c.key;
  }
  text += '\n';
  for (const auto& row : rows_) {
    bool first = true;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (!columns_[c].csv) continue;
      if (!first) text += ',';
      text += csv_cell(columns_[c], row[c]);
      first = false;
    }
    text += '\n';
  }
  return text;
}

void Table::write_csv(const std::string& path) const { write_file_atomic(path, csv()); }

void Table::write_json(JsonWriter& j) const {
  j.begin_array();
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    j.begin_object();
    write_json_fields(j, r);
    j.end_object();
  }
  j.end_array();
}

void Table::write_json_fields(JsonWriter& j, std::size_t row) const {
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (!columns_[c].json) continue;
    j.key(columns_[c].key);
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<double>>)
            j.array(x);
          else
            j.value(x);
        },
        rows_.at(row)[c]);
  }
}

}  // namespace usp::report
