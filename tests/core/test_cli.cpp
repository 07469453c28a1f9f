// The command line: every flag typed, bounded and explained; every mistake named.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "common/error.hpp"

using namespace usp;

namespace {
Cli make() {
  Cli cli("prog", "what prog does");
  cli.add_common("out/x").add_steps(10);
  cli.add_int("bytes", 1024, "message size", 1);
  cli.add_float("lr", 3e-4, "learning rate", 0.0, 1.0);
  cli.add_choice("mode", "naive", {"naive", "overlap", "bucket"}, "variant");
  cli.add_flag("verbose", "say more");
  return cli;
}
void parse(Cli& cli, std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  cli.parse(static_cast<int>(args.size()), args.data());
}
std::string error_of(std::vector<const char*> args) {
  Cli cli = make();
  try {
    parse(cli, args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("flags parse in both forms, with defaults and size suffixes", "[core][cli]") {
  Cli cli = make();
  parse(cli, {"--steps", "5", "--bytes=64M", "--mode", "bucket", "--verbose", "--lr", "0.01"});
  CHECK(cli.get_int("steps") == 5);
  CHECK(cli.get_int("bytes") == 64ll << 20);
  CHECK(cli.get_string("mode") == "bucket");
  CHECK(cli.get_flag("verbose"));
  CHECK(cli.get_float("lr") == Approx(0.01));
  CHECK(cli.get_int("seed") == 1234);
  CHECK(cli.get_string("out") == "out/x");
  CHECK(cli.given("steps"));
  CHECK_FALSE(cli.given("seed"));
  CHECK_FALSE(cli.help_requested());
  CHECK(cli.values_json().find("\"bytes\":67108864") != std::string::npos);
}

TEST_CASE("--help is recognised and lists every flag", "[core][cli]") {
  Cli cli = make();
  parse(cli, {"--steps", "3", "--help", "--nonsense"});
  CHECK(cli.help_requested());
  const std::string h = cli.help();
  for (const char* name : {"--steps", "--seed", "--device", "--backend", "--out", "--bytes", "--lr", "--mode", "--verbose"})
    CHECK(h.find(name) != std::string::npos);
  CHECK(h.find("naive|overlap|bucket") != std::string::npos);
}

TEST_CASE("each mistake gets one message naming the flag", "[core][cli]") {
  CHECK(error_of({"--stpes", "3"}) == "unknown flag --stpes (see --help)");
  CHECK(error_of({"--steps", "0"}) == "--steps must be >= 1, got 0");
  CHECK(error_of({"--steps", "three"}) == "--steps expects an integer, got 'three'");
  CHECK(error_of({"--bytes", "64Q"}) == "--bytes expects an integer (optionally with K, M or G), got '64Q'");
  CHECK(error_of({"--lr", "2"}) == "--lr must be <= 1, got 2");
  CHECK(error_of({"--lr", "fast"}) == "--lr expects a number, got 'fast'");
  CHECK(error_of({"--mode", "magic"}) == "--mode must be one of naive, overlap, bucket, got 'magic'");
  CHECK(error_of({"--steps"}) == "--steps needs a value (see --help)");
  CHECK(error_of({"steps"}) == "unexpected argument 'steps' (flags look like --name value; see --help)");
  CHECK(error_of({"--verbose=maybe"}) == "--verbose is a switch: give it alone or as --verbose=true|false");
}

TEST_CASE("reading an undeclared flag or with the wrong type is a program error", "[core][cli]") {
  Cli cli = make();
  parse(cli, {});
  CHECK_THROWS_AS(cli.get_int("nope"), Error);
  CHECK_THROWS_AS(cli.get_int("mode"), Error);
}
