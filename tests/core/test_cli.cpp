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
// The message parsing args with `cli` gives ("no error" if none).
std::string error_of(Cli cli, std::vector<const char*> args) {
  try {
    parse(cli, args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
std::string error_of(std::vector<const char*> args) { return error_of(make(), std::move(args)); }
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
  CHECK(h.find("[default: 1024]") != std::string::npos);
  CHECK(h.find("[default: 0.0003]") != std::string::npos);
  CHECK(h.find("[default: out/x]") != std::string::npos);
  CHECK(h.find("what prog does") != std::string::npos);
  Cli short_form = make();
  parse(short_form, {"-h", "--steps", "0"});  // nothing after --help is checked
  CHECK(short_form.help_requested());
  CHECK(error_of({"--steps", "0", "--help"}) == "--steps must be >= 1, got 0");  // what precedes it is
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
  // The same messages in the --name=value form, and for a mistake after good flags.
  CHECK(error_of({"--stpes=3"}) == "unknown flag --stpes (see --help)");
  CHECK(error_of({"--steps=0"}) == "--steps must be >= 1, got 0");
  CHECK(error_of({"--steps="}) == "--steps needs a value (see --help)");
  CHECK(error_of({"--steps=", "--seed", "3"}) == "--steps expects an integer, got '--seed'");
  CHECK(error_of({"--steps", "4", "--mode=magic"}) == "--mode must be one of naive, overlap, bucket, got 'magic'");
  CHECK(error_of({"--steps", "4", "-x"}) == "unexpected argument '-x' (flags look like --name value; see --help)");
  CHECK(error_of({"--"}) == "unexpected argument '--' (flags look like --name value; see --help)");
  // The first mistake on the line is the one reported.
  CHECK(error_of({"--steps", "0", "--lr", "2"}) == "--steps must be >= 1, got 0");
  CHECK(error_of({"--lr", "nan"}) == "--lr expects a number, got 'nan'");
  CHECK(error_of({"--lr", "0.5x"}) == "--lr expects a number, got '0.5x'");
}

TEST_CASE("integers never wrap: beyond 64 bits, with or without a suffix, is out of range", "[core][cli]") {
  // 18014398509481985K = (2^54 + 1) * 2^10 > 2^63: would wrap to a small value if multiplied blindly.
  CHECK(error_of({"--bytes", "18014398509481985K"}) == "--bytes must be <= 9223372036854775807, got 18014398509481985K");
  CHECK(error_of({"--bytes", "8589934592G"}) == "--bytes must be <= 9223372036854775807, got 8589934592G");  // 2^33 G = 2^63
  CHECK(error_of({"--bytes", "9223372036854775808"}) == "--bytes must be <= 9223372036854775807, got 9223372036854775808");
  CHECK(error_of({"--bytes", "99999999999999999999999"}) == "--bytes must be <= 9223372036854775807, got 99999999999999999999999");
  CHECK(error_of({"--seed", "-9223372036854775809"}) == "--seed must be >= 0, got -9223372036854775809");
  CHECK(error_of({"--seed", "-1"}) == "--seed must be >= 0, got -1");
  Cli cli = make();
  parse(cli, {"--bytes", "8589934591G", "--seed=9223372036854775807"});  // the largest that fit
  CHECK(cli.get_int("bytes") == (std::int64_t{8589934591} << 30));
  CHECK(cli.get_int("seed") == INT64_MAX);
  parse(cli, {"--bytes", "3k", "--steps", "+7"});
  CHECK(cli.get_int("bytes") == 3072);
  CHECK(cli.get_int("steps") == 7);
  CHECK_THROWS_WITH(parse_size("9007199254740992G", "--x"), "--x does not fit in a 64-bit integer, got '9007199254740992G'");
  CHECK(parse_size("-2M", "--x") == -(std::int64_t{2} << 20));
}

TEST_CASE("split_list keeps every item between commas, empty ones too", "[core][cli]") {
  using V = std::vector<std::string>;
  CHECK(split_list("a,b") == V{"a", "b"});
  CHECK(split_list("a,,b") == V{"a", "", "b"});
  CHECK(split_list("a,") == V{"a", ""});
  CHECK(split_list(",a") == V{"", "a"});
  CHECK(split_list("") == V{""});
}

TEST_CASE("an integer list: sizes in range, no empty item, repeats as asked, one message form", "[core][cli]") {
  using V = std::vector<std::int64_t>;
  CHECK(parse_size_list("256,512,1K", "--seqs", 1, 4096) == V{256, 512, 1024});
  CHECK(parse_size_list("+4,4", "--seqs", 1, 4096) == V{4, 4});  // repeats allowed by default
  CHECK(parse_int_list("1,2,4", "--tp", 1, 4096, Repeats::refused) == std::vector<int>{1, 2, 4});
  CHECK(parse_int_list("4096", "--tp", 1, 4096, Repeats::refused) == std::vector<int>{4096});
  const std::string expects = "--tp expects a comma-separated list of integers in 1..4096; ";
  CHECK_THROWS_WITH(parse_int_list("1,x", "--tp", 1, 4096), expects + "got 'x'");
  CHECK_THROWS_WITH(parse_int_list("0", "--tp", 1, 4096), expects + "got '0'");
  CHECK_THROWS_WITH(parse_int_list("4097", "--tp", 1, 4096), expects + "got '4097'");
  CHECK_THROWS_WITH(parse_int_list("2.5", "--tp", 1, 4096), expects + "got '2.5'");
  CHECK_THROWS_WITH(parse_int_list("99999999999999999999", "--tp", 1, 4096), expects + "got '99999999999999999999'");
  CHECK_THROWS_WITH(parse_int_list("1,,2", "--tp", 1, 4096), expects + "got an empty item in '1,,2'");
  CHECK_THROWS_WITH(parse_int_list("1,", "--tp", 1, 4096), expects + "got an empty item in '1,'");
  CHECK_THROWS_WITH(parse_int_list(",1", "--tp", 1, 4096), expects + "got an empty item in ',1'");
  CHECK_THROWS_WITH(parse_int_list("", "--tp", 1, 4096), expects + "got an empty value");
  CHECK_THROWS_WITH(parse_int_list("1,2,2", "--tp", 1, 4096, Repeats::refused), "--tp lists 2 twice");
  CHECK_THROWS_WITH(parse_size_list("1K,1024", "--tp", 1, 4096, Repeats::refused), "--tp lists 1024 twice");
  CHECK_THROWS_AS(parse_size_list("1,x", "--tp", 1, 4096), UsageError);
}

TEST_CASE("a list of names: each one of the choices, none twice, no empty item, one message form", "[core][cli]") {
  enum class Shape { ring, all_gather };
  const auto name = [](Shape s) { return s == Shape::ring ? "ring" : "all-gather"; };
  const std::vector<Shape> both = {Shape::ring, Shape::all_gather};
  CHECK(parse_choice_list<Shape>("all-gather,ring", "--attention", both, +name) ==
        std::vector<Shape>{Shape::all_gather, Shape::ring});
  CHECK(parse_choice_list("b", "--x", {"a", "b", "c"}) == std::vector<std::size_t>{1});
  const std::string expects = "--attention expects a comma-separated list of ring,all-gather; ";
  CHECK_THROWS_WITH(parse_choice_list<Shape>("ring,banana", "--attention", both, +name), expects + "got 'banana'");
  CHECK_THROWS_WITH(parse_choice_list<Shape>("Ring", "--attention", both, +name), expects + "got 'Ring'");
  CHECK_THROWS_WITH(parse_choice_list<Shape>("ring,", "--attention", both, +name),
                    expects + "got an empty item in 'ring,'");
  CHECK_THROWS_WITH(parse_choice_list<Shape>("", "--attention", both, +name), expects + "got an empty value");
  CHECK_THROWS_WITH(parse_choice_list<Shape>("ring,all-gather,ring", "--attention", both, +name),
                    "--attention lists ring twice");
}

TEST_CASE("values_json keeps declaration order and each flag's JSON type", "[core][cli]") {
  Cli cli = make();
  parse(cli, {"--lr=0.125", "--verbose=false", "--out", "dir \"q\"", "--steps", "3"});
  CHECK(cli.get_flag("verbose") == false);
  CHECK(cli.given("verbose"));
  CHECK(cli.get_int("steps") == 3);
  CHECK(cli.values_json() ==
        "{\"seed\":1234,\"device\":\"auto\",\"backend\":\"auto\",\"out\":\"dir \\\"q\\\"\",\"steps\":3,"
        "\"bytes\":1024,\"lr\":0.125,\"mode\":\"naive\",\"verbose\":false}");
  Cli defaults = make();
  parse(defaults, {});
  CHECK(defaults.values_json().find("\"lr\":0.0003,") != std::string::npos);  // the default, exactly 3e-4
  CHECK(defaults.get_float("lr") == 3e-4);
}

TEST_CASE("reading an undeclared flag or with the wrong type is a program error", "[core][cli]") {
  Cli cli = make();
  parse(cli, {});
  CHECK_THROWS_AS(cli.get_int("nope"), Error);
  CHECK_THROWS_AS(cli.get_int("mode"), Error);
  CHECK_THROWS_AS(cli.add_int("steps", 1, "again"), Error);  // declared twice
}

TEST_CASE("a refused flag says why, in both forms, and --help does not list it", "[core][cli]") {
  const auto refusing = [] {
    Cli cli = make();
    cli.refuse("eval-every", "nothing trains here");
    return cli;
  };
  for (std::vector<const char*> args : {std::vector<const char*>{"--eval-every", "2"}, {"--eval-every=2"},
                                        {"--steps", "3", "--eval-every"}}) {
    CHECK(error_of(refusing(), args) == "--eval-every: nothing trains here");
  }
  CHECK(refusing().help().find("eval-every") == std::string::npos);
  CHECK_FALSE(refusing().declared("eval-every"));
  CHECK(error_of({"--eval-every", "2"}) == "unknown flag --eval-every (see --help)");  // not refused: unknown
}

TEST_CASE("a flag given twice, or a text flag given empty, is refused: no value silently wins", "[core][cli]") {
  CHECK(error_of({"--steps", "2", "--steps", "3"}) == "--steps is given twice ('2', then '3'): give it once");
  CHECK(error_of({"--steps=2", "--lr", "0.5", "--steps", "2"}) == "--steps is given twice ('2', then '2'): give it once");
  CHECK(error_of({"--verbose", "--verbose"}) == "--verbose is given twice ('true', then 'true'): give it once");
  CHECK(error_of({"--mode", "bucket", "--mode=naive"}) == "--mode is given twice ('bucket', then 'naive'): give it once");
  CHECK(error_of({"--out", ""}) == "--out needs a value, got an empty one");
  CHECK(error_of({"--mode", ""}) == "--mode must be one of naive, overlap, bucket, got ''");
  Cli cli = make();
  parse(cli, {"--steps", "2"});
  parse(cli, {"--steps", "4"});  // a second parse starts afresh
  CHECK(cli.get_int("steps") == 4);
}

TEST_CASE("a declared flag this program does not act on can be refused: it keeps its default", "[core][cli]") {
  const auto refusing = [] {
    Cli cli = make();
    cli.refuse("lr", "nothing trains here");
    return cli;
  };
  for (std::vector<const char*> args : {std::vector<const char*>{"--lr", "0.5"}, {"--lr=0.5"}, {"--steps", "3", "--lr"},
                                        {"--lr", "banana"}}) {
    CHECK(error_of(refusing(), args) == "--lr: nothing trains here");
  }
  Cli cli = refusing();
  parse(cli, {"--steps", "3"});
  CHECK(cli.get_float("lr") == 3e-4);
  CHECK(cli.help().find("--lr") == std::string::npos);
  Cli early("prog", "refused before it is declared");
  early.refuse("lr", "nothing trains here");
  early.add_float("lr", 1e-3, "learning rate");
  CHECK_THROWS_WITH(parse(early, {"--lr", "1"}), "--lr: nothing trains here");
}
