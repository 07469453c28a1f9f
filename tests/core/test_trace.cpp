// Trace: spans from TraceScope, the CSV and Chrome-JSON forms (the JSON checked by Python's
// strict parser, so Perfetto will open it), and write_trace across ranks.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/trace.hpp"
#include "tests/support/test_world.hpp"

namespace fs = std::filesystem;
using usp::Span;
using usp::Tracer;

namespace {

// Leaves the process-wide tracer off and empty whatever a test does to it.
struct TracerSession {
  TracerSession() {
    Tracer::instance().clear();
    Tracer::instance().enable(true);
  }
  ~TracerSession() {
    Tracer::instance().enable(false);
    Tracer::instance().clear();
  }
};

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("usp_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// A CSV reader written from RFC 4180, independent of the one in trace.cpp: records of fields;
// quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool in_quotes = false, pending = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += text[++i];
      else in_quotes = false;
    } else if (c == '"') {
      in_quotes = pending = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
      pending = true;
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
      pending = false;
    } else {
      field += c;
      pending = true;
    }
  }
  if (pending) rows.back().push_back(field);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool have_python() { return std::system("python3 -c pass >/dev/null 2>&1") == 0; }

// What Python's strict json module reads from a Chrome trace, one event a line:
//   X pid tid ts dur hex(name) hex(cat)      M pid tid kind hex(args.name or sort index)
// plus a first line "unit <displayTimeUnit>". Returns false if the file is not valid JSON.
bool chrome_events(const fs::path& json, std::vector<std::string>& lines) {
  const fs::path script = json.parent_path() / "read_trace.py";
  const fs::path out = json.parent_path() / "events.txt";
  write_file(script,
             "import json, sys\n"
             "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
             "o = open(sys.argv[2], 'w')\n"
             "o.write('unit %s\\n' % d['displayTimeUnit'])\n"
             "for e in d['traceEvents']:\n"
             "    if e['ph'] == 'X':\n"
             "        o.write('X %d %d %.3f %.3f %s %s\\n' % (e['pid'], e['tid'], e['ts'], e['dur'],\n"
             "                e['name'].encode('utf-8').hex(), e['cat'].encode('utf-8').hex()))\n"
             "    elif e['ph'] == 'M':\n"
             "        a = e['args']\n"
             "        v = a['name'] if 'name' in a else str(a['sort_index'])\n"
             "        o.write('M %d %d %s %s\\n' % (e['pid'], e['tid'], e['name'], v.encode('utf-8').hex()))\n"
             "    else:\n"
             "        o.write('? %s\\n' % e['ph'])\n");
  const std::string cmd = "python3 '" + script.string() + "' '" + json.string() + "' '" + out.string() + "'";
  if (std::system(cmd.c_str()) != 0) return false;
  std::istringstream in(read_file(out));
  lines.clear();
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return true;
}

// "t<index>". Built with append rather than "t" + std::string: GCC 12 warns falsely
// (-Wrestrict) on that operator once inlined into a thread body.
std::string thread_span_name(int t) {
  std::string name = "t";
  name += std::to_string(t);
  return name;
}

std::string fmt3(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

// ---- recording -----------------------------------------------------------------------------

TEST_CASE("trace: TraceScope records nested spans in order", "[core][trace]") {
  TracerSession session;
  {
    usp::TraceScope outer("step");
    { usp::TraceScope a("forward"); }
    { usp::TraceScope b("all_reduce bucket 0", "comm"); }
  }
  const auto spans = Tracer::instance().spans();
  REQUIRE(spans.size() == 3);
  // Recorded when each scope closes: inner ones first.
  CHECK(spans[0].name == "forward");
  CHECK(spans[0].stream == "compute");
  CHECK(spans[1].name == "all_reduce bucket 0");
  CHECK(spans[1].stream == "comm");
  CHECK(spans[2].name == "step");
  for (const Span& s : spans) {
    CHECK(s.start_us >= 0);
    CHECK(s.start_us <= s.end_us);
  }
  CHECK(spans[2].start_us <= spans[0].start_us);
  CHECK(spans[0].end_us <= spans[1].start_us);
  CHECK(spans[1].end_us <= spans[2].end_us);
}

TEST_CASE("trace: a disabled tracer records nothing", "[core][trace]") {
  TracerSession session;
  Tracer::instance().enable(false);
  { usp::TraceScope s("ignored"); }
  Tracer::instance().add("ignored too", "comm", 0, 1);
  CHECK(Tracer::instance().spans().empty());
  // A scope opened while tracing was off stays unrecorded even if tracing starts meanwhile.
  {
    usp::TraceScope s("half");
    Tracer::instance().enable(true);
  }
  CHECK(Tracer::instance().spans().empty());
  { usp::TraceScope s("whole"); }
  CHECK(Tracer::instance().spans().size() == 1);
}

TEST_CASE("trace: the clock is monotonic and spans measure real time", "[core][trace]") {
  TracerSession session;
  const double t0 = Tracer::instance().now_us();
  {
    usp::TraceScope s("sleep");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double t1 = Tracer::instance().now_us();
  CHECK(t0 <= t1);
  const auto spans = Tracer::instance().spans();
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].end_us - spans[0].start_us >= 5000.0);
  CHECK(spans[0].start_us >= t0);
  CHECK(spans[0].end_us <= t1);
}

TEST_CASE("trace: add is safe from several threads", "[core][trace]") {
  TracerSession session;
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kEach; ++i) {
        usp::TraceScope s(thread_span_name(t), t % 2 ? "comm" : "compute");
      }
    });
  for (auto& th : threads) th.join();
  const auto spans = Tracer::instance().spans();
  REQUIRE(spans.size() == static_cast<std::size_t>(kThreads * kEach));
  std::map<std::string, int> per_name;
  for (const Span& s : spans) ++per_name[s.name];
  for (int t = 0; t < kThreads; ++t) CHECK(per_name[thread_span_name(t)] == kEach);
}

// ---- CSV -----------------------------------------------------------------------------------

TEST_CASE("trace: hidden_fraction is the part of the named comm spans under the compute spans' union",
          "[core][trace]") {
  using usp::Span;
  const std::vector<Span> spans = {
      {"send", "comm", 0, 10},              // under compute for [2, 8): 6 of 10
      {"recv", "comm", 20, 30},             // under nothing
      {"all_reduce", "comm", 0, 30},        // not asked for
      {"ring attention", "compute", 2, 6},
      {"ring attention", "compute", 4, 8},  // overlaps the one before: counted once
      {"forward layer 0", "compute", 0, 40}};
  CHECK(usp::hidden_fraction(spans, {"send", "recv"}, "ring") == Approx(6.0 / 20));
  CHECK(usp::hidden_fraction(spans, {"send"}, "ring") == Approx(0.6));
  CHECK(usp::hidden_fraction(spans, {"send", "recv"}) == Approx(1.0));  // any compute span: the layer's
  CHECK(usp::hidden_fraction(spans, {"broadcast"}) == 0.0);             // no such span
}

TEST_CASE("trace: CSV has the header and one record per span", "[core][trace]") {
  const std::vector<Span> spans = {{"forward", "compute", 0.0, 1.5},
                                   {"all_reduce, bucket \"0\"", "comm", 1.25, 7.125},
                                   {"two\nlines", "compute", 10, 12}};
  const std::string with = usp::spans_to_csv(3, spans, true);
  const std::string without = usp::spans_to_csv(3, spans, false);
  CHECK(with.rfind("rank,stream,name,start_us,end_us\n", 0) == 0);
  CHECK(with == "rank,stream,name,start_us,end_us\n" + without);
  CHECK(usp::spans_to_csv(0, {}, false).empty());
  CHECK(usp::spans_to_csv(0, {}, true) == "rank,stream,name,start_us,end_us\n");

  const auto rows = read_csv(with);
  REQUIRE(rows.size() == spans.size() + 1);
  CHECK(rows[0] == std::vector<std::string>{"rank", "stream", "name", "start_us", "end_us"});
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const auto& row = rows[i + 1];
    REQUIRE(row.size() == 5);
    CHECK(row[0] == "3");
    CHECK(row[1] == spans[i].stream);
    CHECK(row[2] == spans[i].name);
    CHECK(std::stod(row[3]) == Approx(spans[i].start_us));
    CHECK(std::stod(row[4]) == Approx(spans[i].end_us));
  }
  // Plain names stay unquoted, so simple tools (cut, awk) can read simple traces.
  CHECK(without.rfind("3,compute,forward,0.000,1.500\n", 0) == 0);
  CHECK(without.find("\"all_reduce, bucket \"\"0\"\"\"") != std::string::npos);
}

// ---- Chrome trace JSON -------------------------------------------------------------------

TEST_CASE("trace: Chrome JSON is valid, escaped, one X event per span", "[core][trace]") {
  const std::vector<std::pair<int, std::vector<Span>>> per_rank = {
      {0, {{"forward", "compute", 0, 10}, {"all_reduce \"grads\"", "comm", 2, 8.5}}},
      {1, {{"back\\slash", "compute", 1, 4}, {"tab\there\nnewline", "comm", 4, 9}, {"ctrl\x01", "p2p", 5, 6}}},
      {2, {}},
      {3, {{"unicode µs ✓", "compute", 0.001, 0.002}}}};
  const std::string json = usp::spans_to_chrome_json(per_rank);
  CHECK(json.find("\"traceEvents\"") != std::string::npos);
  CHECK(json.find("\"displayTimeUnit\"") != std::string::npos);
  // Raw quotes and control characters from the names must not appear unescaped.
  CHECK(json.find("\"all_reduce \"grads\"\"") == std::string::npos);
  CHECK(json.find('\t') == std::string::npos);
  CHECK(json.find('\x01') == std::string::npos);

  if (!have_python()) {
    WARN("python3 not found: Chrome JSON structure not checked");
    return;
  }
  TempDir dir("trace_json");
  write_file(dir.path / "t.json", json);
  std::vector<std::string> lines;
  REQUIRE(chrome_events(dir.path / "t.json", lines));
  REQUIRE(!lines.empty());
  CHECK(lines[0] == "unit ms");

  std::vector<std::string> x_events;
  std::map<std::pair<int, int>, std::string> thread_names;  // (pid, tid) -> stream
  std::map<int, std::string> process_names;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::string ph;
    in >> ph;
    CHECK(ph != "?");
    if (ph == "X") {
      x_events.push_back(lines[i]);
    } else if (ph == "M") {
      int pid = 0, tid = 0;
      std::string kind, value;
      in >> pid >> tid >> kind >> value;
      if (kind == "process_name") process_names[pid] = value;
      if (kind == "thread_name") thread_names[{pid, tid}] = value;
    }
  }

  std::vector<std::string> expected;
  std::map<std::string, int> lane_of_stream;
  for (const auto& [rank, spans] : per_rank) {
    CHECK(process_names[rank] == hex("rank " + std::to_string(rank)));
    for (const Span& s : spans) {
      // Every stream keeps one lane across ranks, and that lane is named after it.
      int tid = -1;
      for (const auto& [key, name] : thread_names)
        if (key.first == rank && name == hex(s.stream)) tid = key.second;
      REQUIRE(tid >= 0);
      if (lane_of_stream.count(s.stream)) CHECK(lane_of_stream[s.stream] == tid);
      lane_of_stream[s.stream] = tid;
      expected.push_back("X " + std::to_string(rank) + " " + std::to_string(tid) + " " + fmt3(s.start_us) + " " +
                         fmt3(s.end_us - s.start_us) + " " + hex(s.name) + " " + hex(s.stream));
    }
  }
  CHECK(x_events.size() == 6);
  CHECK(x_events == expected);
  // Lanes are distinct small integers.
  std::set<int> lanes;
  for (const auto& [stream, tid] : lane_of_stream) {
    CHECK(tid >= 0);
    CHECK(tid < 16);
    lanes.insert(tid);
  }
  CHECK(lanes.size() == lane_of_stream.size());
}

// ---- write_trace across ranks ------------------------------------------------------------

TEST_CASE("trace: write_trace gathers every rank's spans on rank 0", "[core][trace][mpi]") {
  usp::Communicator& world = usp::testing::world();
  const int n = world.size(), me = world.rank();
  TracerSession session;
  Tracer::instance().align(world);
  CHECK(Tracer::instance().now_us() < 60e6);  // the epoch restarted just now

  // Rank r records r compute spans (rank 0 none: an empty contribution), one comm span on odd
  // ranks, and rank 1 one span whose name needs CSV quoting.
  auto expected_names = [](int r) {
    std::multiset<std::string> names;
    for (int i = 0; i < r; ++i) names.insert("layer " + std::to_string(i) + " of rank " + std::to_string(r));
    if (r % 2 == 1) names.insert("send to " + std::to_string(r - 1));
    if (r == 1) names.insert("quoted, \"name\"\nwith a newline");
    return names;
  };
  for (int i = 0; i < me; ++i) {
    usp::TraceScope s("layer " + std::to_string(i) + " of rank " + std::to_string(me));
  }
  if (me % 2 == 1) {
    usp::TraceScope s("send to " + std::to_string(me - 1), "comm");
  }
  if (me == 1) Tracer::instance().add("quoted, \"name\"\nwith a newline", "compute", 1.0, 2.0);

  TempDir dir("trace_mpi");  // only rank 0's directory is written
  usp::write_trace(world, (dir.path / "out").string(), "trace");
  if (me != 0) return;

  const fs::path csv = dir.path / "out" / "trace.csv";
  const fs::path json = dir.path / "out" / "trace.json";
  REQUIRE(fs::exists(csv));
  REQUIRE(fs::exists(json));
  const auto rows = read_csv(read_file(csv));
  REQUIRE(!rows.empty());
  CHECK(rows[0] == std::vector<std::string>{"rank", "stream", "name", "start_us", "end_us"});

  std::map<int, std::multiset<std::string>> seen;
  std::size_t total = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    REQUIRE(row.size() == 5);
    const int rank = std::stoi(row[0]);
    CHECK(rank >= 0);
    CHECK(rank < n);
    const bool comm = row[2].rfind("send to", 0) == 0;
    CHECK(row[1] == (comm ? "comm" : "compute"));
    CHECK(std::stod(row[3]) <= std::stod(row[4]));
    seen[rank].insert(row[2]);
    ++total;
  }
  std::size_t expected_total = 0;
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    CHECK(seen[r] == expected_names(r));
    expected_total += expected_names(r).size();
  }
  CHECK(total == expected_total);

  if (have_python()) {
    std::vector<std::string> lines;
    REQUIRE(chrome_events(json, lines));
    std::size_t x = 0;
    for (const auto& line : lines) x += line.rfind("X ", 0) == 0 ? 1 : 0;
    CHECK(x == expected_total);
  }
}

#if defined(USP_HAVE_MPI)
TEST_CASE("trace: the MPI communicator records one comm span per async collective", "[core][trace][mpi]") {
  usp::Communicator& world = usp::testing::world();
  REQUIRE(world.backend() == "mpi");
  TracerSession session;
  Tracer::instance().align(world);  // its barrier records nothing: barriers move no data
  Tracer::instance().clear();

  usp::Tensor t = usp::Tensor::from_floats(std::vector<float>(1024, 1.0f), {1024});
  const double before = Tracer::instance().now_us();
  usp::WorkHandle h = world.all_reduce_async(t);
  h->wait();
  const double after = Tracer::instance().now_us();
  world.barrier();

  // The span is added before the op completes, so after wait() it is already there; it lies
  // within [launch, wait returned] and sits on the "comm" stream, named after the op.
  std::vector<Span> comm;
  for (const Span& s : Tracer::instance().spans())
    if (s.stream == "comm") comm.push_back(s);
  REQUIRE(comm.size() == 1);
  CHECK(comm[0].name.rfind("all_reduce", 0) == 0);
  CHECK(comm[0].start_us >= before);
  CHECK(comm[0].end_us <= after);
  CHECK(comm[0].start_us <= comm[0].end_us);
  CHECK(t.to_floats()[0] == static_cast<float>(world.size()));

  // With the tracer off, the same op records nothing.
  Tracer::instance().enable(false);
  Tracer::instance().clear();
  world.all_reduce_async(t)->wait();
  CHECK(Tracer::instance().spans().empty());
}
#endif
