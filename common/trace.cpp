// Trace: the per-rank span recorder, its two text forms (CSV for the plot scripts, Chrome
// trace JSON for Perfetto) and the collective that brings every rank's spans to rank 0.
#include "common/trace.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "common/comm/communicator.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/tensor.hpp"

namespace usp {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* const kCsvHeader = "rank,stream,name,start_us,end_us\n";

// RFC 4180 quoting: a field with a comma, quote or line break is wrapped in quotes and its
// quotes doubled, so any span name survives the trip through the CSV.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// Microseconds with nanosecond resolution: what the steady clock gives, and no float noise.
std::string format_us(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return buf;
}

// Splits CSV text (as written by spans_to_csv, any number of records) into records of fields.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
      continue;
    }
    if (ch == '"') {
      quoted = any = true;
    } else if (ch == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
    } else if (ch != '\r') {
      field += ch;
      any = true;
    }
  }
  if (any) {  // a last record without its newline
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Span> spans_from_csv(const std::string& text) {
  std::vector<Span> spans;
  for (auto& f : parse_csv(text)) {
    if (f.size() != 5) throw Error("write_trace: malformed span record with " + std::to_string(f.size()) + " fields");
    spans.push_back(Span{std::move(f[2]), std::move(f[1]), std::stod(f[3]), std::stod(f[4])});
  }
  return spans;
}

// Packs text into i32 words (zero padded) so it travels through any backend's gather.
std::int64_t words_for(std::int64_t bytes) { return (bytes + 3) / 4; }

}  // namespace

// ---- Tracer ---------------------------------------------------------------------------------

Tracer& Tracer::instance() {
  static Tracer tracer;
  return tracer;
}

Tracer::Tracer() : epoch_ns_(steady_ns()) {}

void Tracer::enable(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  enabled_ = on;
}

double Tracer::now_us() const {
  std::int64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = epoch_ns_;
  }
  return static_cast<double>(steady_ns() - epoch) / 1000.0;
}

void Tracer::add(const std::string& name, const std::string& stream, double start_us, double end_us) {
  std::lock_guard<std::mutex> lock(mu_);
  // A disabled tracer records nothing, so untraced runs pay nothing and grow no list.
  if (!enabled_) return;
  spans_.push_back(Span{name, stream, start_us, end_us});
}

std::vector<Span> Tracer::spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spans_;
}

void Tracer::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.clear();
}

void Tracer::align(Communicator& comm) {
  // Every rank leaves the barrier at (nearly) the same instant; starting the epoch there puts
  // all ranks' time axes on one origin, up to the barrier's exit skew.
  comm.barrier();
  const std::int64_t now = steady_ns();
  std::lock_guard<std::mutex> lock(mu_);
  epoch_ns_ = now;
}

// ---- TraceScope -----------------------------------------------------------------------------

TraceScope::TraceScope(std::string name, std::string stream)
    : name_(std::move(name)), stream_(std::move(stream)), start_us_(-1) {
  Tracer& t = Tracer::instance();
  if (t.enabled()) start_us_ = t.now_us();
}

TraceScope::~TraceScope() {
  // start_us_ < 0: tracing was off when the scope opened; half a span is no span.
  if (start_us_ < 0) return;
  Tracer& t = Tracer::instance();
  t.add(name_, stream_, start_us_, t.now_us());
}

// ---- serialisation --------------------------------------------------------------------------

std::string spans_to_csv(int rank, const std::vector<Span>& spans, bool header) {
  std::string out = header ? kCsvHeader : "";
  const std::string r = std::to_string(rank);
  for (const Span& s : spans) {
    out += r;
    out += ',';
    out += csv_field(s.stream);
    out += ',';
    out += csv_field(s.name);
    out += ',';
    out += format_us(s.start_us);
    out += ',';
    out += format_us(s.end_us);
    out += '\n';
  }
  return out;
}

std::string spans_to_chrome_json(const std::vector<std::pair<int, std::vector<Span>>>& per_rank) {
  // One lane number per stream name, the same on every rank so "comm" is the same row
  // everywhere: compute first, comm second, other streams in order of first appearance.
  std::map<std::string, int> lane{{"compute", 0}, {"comm", 1}};
  for (const auto& [rank, spans] : per_rank)
    for (const Span& s : spans) lane.emplace(s.stream, static_cast<int>(lane.size()));

  JsonWriter w;
  w.begin_object().key("traceEvents").begin_array();
  for (const auto& [rank, spans] : per_rank) {
    // Metadata first: Perfetto names process "rank N" and its threads by stream, sorted by lane.
    w.begin_object().field("name", "process_name").field("ph", "M").field("pid", rank).field("tid", 0);
    w.key("args").begin_object().field("name", "rank " + std::to_string(rank)).end_object().end_object();
    w.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", rank).field("tid", 0);
    w.key("args").begin_object().field("sort_index", rank).end_object().end_object();
    std::map<int, std::string> used;
    for (const Span& s : spans) used.emplace(lane.at(s.stream), s.stream);
    for (const auto& [tid, stream] : used) {
      w.begin_object().field("name", "thread_name").field("ph", "M").field("pid", rank).field("tid", tid);
      w.key("args").begin_object().field("name", stream).end_object().end_object();
      w.begin_object().field("name", "thread_sort_index").field("ph", "M").field("pid", rank).field("tid", tid);
      w.key("args").begin_object().field("sort_index", tid).end_object().end_object();
    }
    for (const Span& s : spans) {
      w.begin_object().field("name", s.name).field("cat", s.stream).field("ph", "X");
      w.field("ts", s.start_us).field("dur", std::max(0.0, s.end_us - s.start_us));
      w.field("pid", rank).field("tid", lane.at(s.stream)).end_object();
    }
  }
  w.end_array().field("displayTimeUnit", "ms").end_object();
  return w.str();
}

// ---- hidden_fraction -------------------------------------------------------------------------

std::vector<std::pair<double, double>> busy_intervals(const std::vector<Span>& spans,
                                                      const std::string& compute_prefix) {
  std::vector<std::pair<double, double>> busy;
  for (const Span& s : spans)
    if (s.stream == "compute" && s.name.rfind(compute_prefix, 0) == 0) busy.emplace_back(s.start_us, s.end_us);
  std::sort(busy.begin(), busy.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& iv : busy) {
    if (!merged.empty() && iv.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, iv.second);
    else
      merged.push_back(iv);
  }
  return merged;
}

double covered_us(const std::vector<std::pair<double, double>>& intervals, double start_us, double end_us) {
  double covered = 0;
  for (const auto& [b, e] : intervals) covered += std::max(0.0, std::min(end_us, e) - std::max(start_us, b));
  return covered;
}

double hidden_fraction(const std::vector<Span>& spans, const std::vector<std::string>& comm_names,
                       const std::string& compute_prefix) {
  const auto busy = busy_intervals(spans, compute_prefix);
  double total = 0, hidden = 0;
  for (const Span& c : spans) {
    if (c.stream != "comm" || std::find(comm_names.begin(), comm_names.end(), c.name) == comm_names.end()) continue;
    total += c.end_us - c.start_us;
    hidden += covered_us(busy, c.start_us, c.end_us);
  }
  return total > 0 ? hidden / total : 0.0;
}

// ---- write_trace ----------------------------------------------------------------------------

void write_trace(Communicator& comm, const std::string& dir, const std::string& basename) {
  const int n = comm.size();
  const std::string mine = spans_to_csv(comm.rank(), Tracer::instance().spans(), false);
  if (mine.size() > static_cast<std::size_t>(INT32_MAX))
    throw Error("write_trace: this rank's trace is larger than 2 GiB");

  // Ranks hold different numbers of spans, but gather moves equal chunks: learn every
  // length first, then send each text padded to the longest.
  Tensor len = Tensor::empty({1}, DType::i32, MemCategory::CommBuffer);
  len.data<std::int32_t>()[0] = static_cast<std::int32_t>(mine.size());
  Tensor lens = Tensor::empty({n}, DType::i32, MemCategory::CommBuffer);
  comm.all_gather(len, lens);
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(n));
  std::int64_t longest = 0;
  for (int r = 0; r < n; ++r) {
    lengths[static_cast<std::size_t>(r)] = lens.data<std::int32_t>()[r];
    longest = std::max(longest, lengths[static_cast<std::size_t>(r)]);
  }

  const std::int64_t words = std::max<std::int64_t>(1, words_for(longest));
  Tensor text = Tensor::zeros({words}, DType::i32, MemCategory::CommBuffer);
  std::memcpy(text.raw(), mine.data(), mine.size());
  const bool root = comm.rank() == 0;
  Tensor all = Tensor::empty({root ? words * n : 0}, DType::i32, MemCategory::CommBuffer);
  comm.gather(text, all, 0);
  if (!root) return;

  std::vector<std::pair<int, std::vector<Span>>> per_rank;
  std::string csv = kCsvHeader;
  const char* bytes = static_cast<const char*>(all.raw());
  for (int r = 0; r < n; ++r) {
    const std::string part(bytes + static_cast<std::size_t>(r * words * 4),
                           static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]));
    csv += part;
    per_rank.emplace_back(r, spans_from_csv(part));
  }
  const std::string base = dir + "/" + basename;
  write_file_atomic(base + ".json", spans_to_chrome_json(per_rank));
  write_file_atomic(base + ".csv", csv);
}

}  // namespace usp
