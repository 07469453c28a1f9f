// Output files (common/io/output_file): a result appears complete or not at all, every failure
// is an exception naming the path, and --out is checked before any work.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/calc/memory_sweep.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"
#include "common/memory_tracker.hpp"

namespace fs = std::filesystem;
using namespace usp;

namespace {

// A fresh directory under the system temporary directory, removed on scope exit.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "usp_robustness_XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Files in dir, for "nothing was left behind" (no temporary file either).
std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// While alive, this process may not write files larger than `bytes`, and a write past it fails
// with EFBIG instead of killing the process with SIGXFSZ: the "disk full" of a test.
struct FileSizeLimit {
  rlimit saved{};
  struct sigaction saved_action{};
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    struct sigaction ignore{};
    ignore.sa_handler = SIG_IGN;
    REQUIRE(::sigaction(SIGXFSZ, &ignore, &saved_action) == 0);
    rlimit lower = saved;
    lower.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &lower) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::sigaction(SIGXFSZ, &saved_action, nullptr);
  }
};

}  // namespace

TEST_CASE("write_file_atomic writes the whole content and creates missing directories", "[output_file]") {
  ScratchDir dir;
  const std::string path = dir / "a/b/result.csv";
  write_file_atomic(path, "x,y\n1,2\n");
  CHECK(read_all(path) == "x,y\n1,2\n");
  write_file_atomic(path, "replaced\n");
  CHECK(read_all(path) == "replaced\n");
  CHECK(entries(fs::path(path).parent_path()) == 1);  // no temporary file left behind
}

TEST_CASE("a write past the file size limit throws and leaves the name untouched", "[output_file]") {
  ScratchDir dir;
  const std::string fresh = dir / "fresh.json", existing = dir / "existing.json";
  write_file_atomic(existing, "old\n");
  const std::string payload(64 * 1024, 'x');
  {
    const FileSizeLimit limit(4096);
    CHECK_THROWS_WITH(write_file_atomic(fresh, payload), Catch::Contains("cannot write '" + fresh + "'") &&
                                                             Catch::Contains("File too large"));
    CHECK_THROWS_AS(write_file_atomic(existing, payload), Error);
  }
  CHECK_FALSE(fs::exists(fresh));        // no truncated file under the name
  CHECK(read_all(existing) == "old\n");  // the previous content survives
  CHECK(entries(dir.path) == 1);         // and no temporary file either
}

TEST_CASE("the core's writers fail loudly when the file cannot be written", "[output_file]") {
  ScratchDir dir;
  const std::string csv = dir / "sweep.csv";
  const std::vector<calc::SweepRow> rows = calc::run_sweep(calc::figure_memory_vs_seq());
  const FileSizeLimit limit(64);  // the sweep CSV is kilobytes
  CHECK_THROWS_WITH(calc::write_sweep_csv(csv, rows), Catch::Contains("cannot write '" + csv + "'"));
  CHECK_FALSE(fs::exists(csv));
}

TEST_CASE("a link to a device is refused, never written into or replaced", "[output_file]") {
  ScratchDir dir;
  const std::string link = dir / "out.csv";
  fs::create_symlink("/dev/full", link);
  CHECK_THROWS_WITH(write_file_atomic(link, "data\n"), Catch::Contains("is not a regular file"));
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_character_file("/dev/full"));
  // A link to a regular file is written through: the file changes, the link stays.
  const std::string real = dir / "real.csv", link2 = dir / "link2.csv";
  write_file_atomic(real, "old\n");
  fs::create_symlink(real, link2);
  write_file_atomic(link2, "new\n");
  CHECK(fs::is_symlink(link2));
  CHECK(read_all(real) == "new\n");
  // A directory under the name is not replaced either.
  fs::create_directory(dir / "adir");
  CHECK_THROWS_WITH(write_file_atomic(dir / "adir", "x"), Catch::Contains("is not a regular file"));
}

TEST_CASE("an AtomicFile abandoned before commit leaves nothing", "[output_file]") {
  ScratchDir dir;
  const std::string path = dir / "model.safetensors";
  {
    AtomicFile f(path);
    f.write("partial");
  }
  CHECK(entries(dir.path) == 0);
  AtomicFile f(path);
  f.write("all");
  f.commit();
  CHECK(read_all(path) == "all");
  CHECK_THROWS_AS(f.write("more"), Error);  // committed: closed
}

TEST_CASE("the memory timeline CSV goes through the same checked write", "[output_file]") {
  ScratchDir dir;
  const std::string csv = dir / "timeline.csv";
  MemoryTracker::instance().write_timeline_csv(csv);
  CHECK(read_all(csv).rfind("time_s,event,category,delta", 0) == 0);
  const FileSizeLimit limit(8);
  CHECK_THROWS_WITH(MemoryTracker::instance().write_timeline_csv(dir / "t2.csv"), Catch::Contains("cannot write"));
  CHECK_FALSE(fs::exists(dir / "t2.csv"));
}

TEST_CASE("require_output_dir rejects what cannot hold the results, before any work", "[output_file]") {
  ScratchDir dir;
  SECTION("empty") {
    CHECK_THROWS_AS(require_output_dir(""), UsageError);
    CHECK_THROWS_WITH(require_output_dir(""), Catch::Contains("--out must name a directory"));
  }
  SECTION("a file where a directory is expected") {
    write_file_atomic(dir / "file", "x");
    CHECK_THROWS_WITH(require_output_dir(dir / "file"), Catch::EndsWith("file' is not a directory"));
    CHECK_THROWS_AS(require_output_dir(dir / "file/sub"), UsageError);
  }
  SECTION("a directory that cannot be created or written") {
    CHECK_THROWS_WITH(require_output_dir("/proc/usp_out"), Catch::Contains("cannot be created"));
    CHECK_THROWS_WITH(require_output_dir("/proc"), Catch::Contains("is not writable"));
    CHECK_THROWS_WITH(require_output_dir("/dev/full"), Catch::Contains("--out '/dev/full'"));
  }
  SECTION("the flag's name is the one given") {
    CHECK_THROWS_WITH(require_output_dir("", "--save"), Catch::StartsWith("--save"));
  }
  SECTION("a writable directory is created and left empty") {
    const std::string out = dir / "new/out";
    require_output_dir(out);
    CHECK(fs::is_directory(out));
    CHECK(entries(out) == 0);  // the probe file is gone
  }
}
