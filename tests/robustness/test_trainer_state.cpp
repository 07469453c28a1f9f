// A damaged trainer_state.json (negative step, zero batch) is a clear error, not a resumed run.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "common/io/checkpoint.hpp"
#include "common/io/output_file.hpp"

namespace fs = std::filesystem;
using namespace usp;

namespace {
std::string state_json(const std::string& step, const std::string& seq, const std::string& global_batch) {
  return "{\"step\": " + step + ", \"seed\": 7, \"data\": \"synthetic\", \"seq\": " + seq +
         ", \"global_batch\": " + global_batch + ", \"losses\": [5.5, 5.25]}\n";
}
}  // namespace

TEST_CASE("load_trainer_state refuses values no run can have saved", "[checkpoint]") {
  const fs::path dir = fs::temp_directory_path() / ("usp_trainer_state_" + std::to_string(::getpid()));
  const std::string file = (dir / "trainer_state.json").string();
  write_file_atomic(file, state_json("2", "128", "4"));
  const TrainerState ok = load_trainer_state(dir.string());
  CHECK(ok.step == 2);
  CHECK(ok.losses.size() == 2);

  write_file_atomic(file, state_json("-3", "128", "4"));
  CHECK_THROWS_WITH(load_trainer_state(dir.string()), Catch::Contains("step must be >= 0, got -3"));
  write_file_atomic(file, state_json("2", "0", "4"));
  CHECK_THROWS_WITH(load_trainer_state(dir.string()), Catch::Contains("seq must be >= 1, got 0"));
  write_file_atomic(file, state_json("2", "128", "-1"));
  CHECK_THROWS_AS(load_trainer_state(dir.string()), UsageError);
  fs::remove_all(dir);
}
