// The JSON writer: nesting, key order, escaping, exact integers, and doubles that survive a
// round trip (read back by our reader and by Python).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <unistd.h>

#include "common/error.hpp"
#include "common/io/json_value.hpp"
#include "common/json.hpp"

using namespace usp;

TEST_CASE("JsonWriter nests objects and arrays, keeping the order keys were written in", "[core][json]") {
  JsonWriter w;
  w.begin_object();
  w.field("name", "ring \"all\"\\reduce\n");
  w.key("losses").array(std::vector<double>{1.5, 0.25});
  w.key("memory").begin_array();
  w.begin_object().field("rank", 0).field("bytes", std::uint64_t{1} << 40).end_object();
  w.begin_object().field("rank", 1).field("ok", true).end_object();
  w.end_array();
  w.field("nan", std::nan("")).field("inf", -std::numeric_limits<double>::infinity());
  w.key("empty").begin_object().end_object();
  w.field("b_before_a", 1).field("a", 2);  // not sorted
  w.end_object();
  CHECK(w.str() ==
        "{\"name\":\"ring \\\"all\\\"\\\\reduce\\n\",\"losses\":[1.5,0.25],"
        "\"memory\":[{\"rank\":0,\"bytes\":1099511627776},{\"rank\":1,\"ok\":true}],"
        "\"nan\":null,\"inf\":null,\"empty\":{},\"b_before_a\":1,\"a\":2}");
}

TEST_CASE("JsonWriter escapes control characters and keeps UTF-8", "[core][json]") {
  JsonWriter w;
  w.begin_array().value(std::string("\x01\t\x1f/\xC3\xA9")).value("").end_array();
  CHECK(w.str() == "[\"\\u0001\\t\\u001f/\xC3\xA9\",\"\"]");
  JsonWriter bad;  // bytes that are not UTF-8 become U+FFFD rather than an unreadable file
  bad.value(std::string("a\xFF"));
  CHECK(bad.str() == "\"a\xEF\xBF\xBD\"");
}

TEST_CASE("JsonWriter integers are exact at the 64-bit extremes, doubles round-trip", "[core][json]") {
  const std::vector<double> doubles = {0.1, 1.0 / 3.0, 3e-4, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 2.0, 1e21};
  JsonWriter w;
  w.begin_object();
  w.field("min", std::numeric_limits<std::int64_t>::min());
  w.field("max", std::numeric_limits<std::int64_t>::max());
  w.field("umax", std::numeric_limits<std::uint64_t>::max());
  w.field("big", std::int64_t{9007199254740993});  // 2^53 + 1: a double would round it
  w.key("doubles").array(doubles);
  w.end_object();
  const std::string text = w.str();
  CHECK(text.find("\"min\":-9223372036854775808,\"max\":9223372036854775807,\"umax\":18446744073709551615,"
                  "\"big\":9007199254740993") != std::string::npos);
  CHECK(text.find("[0.1,0.3333333333333333,0.0003,1e-300,5e-324,1.7976931348623157e+308,-0.0,2.0,1e+21]") !=
        std::string::npos);  // shortest round-trip text; integral doubles stay floats ("2.0")
  const JsonValue back = parse_json(text, "written");
  CHECK(json_int64(back.at("min")) == std::numeric_limits<std::int64_t>::min());
  CHECK(json_int64(back.at("max")) == std::numeric_limits<std::int64_t>::max());
  CHECK(json_uint64(back.at("umax")) == std::numeric_limits<std::uint64_t>::max());
  CHECK(json_int64(back.at("big")) == 9007199254740993);
  REQUIRE(back.at("doubles").size() == doubles.size());
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    CHECK(json_double(back.at("doubles")[i]) == doubles[i]);  // bit for bit, sign of zero included
    CHECK(std::signbit(json_double(back.at("doubles")[i])) == std::signbit(doubles[i]));
  }
}

TEST_CASE("JsonWriter raw() embeds an already-serialised value", "[core][json]") {
  JsonWriter w;
  w.begin_object().key("flags").raw("{\"z\":1,\"a\":[true,null]}").field("after", "x").end_object();
  CHECK(w.str() == "{\"flags\":{\"z\":1,\"a\":[true,null]},\"after\":\"x\"}");
  JsonWriter bad;
  bad.begin_array();
  CHECK_THROWS_AS(bad.raw("{not json"), Error);
}

TEST_CASE("JsonWriter refuses calls that would write invalid JSON", "[core][json]") {
  JsonWriter w;
  CHECK_THROWS_AS(w.key("outside"), Error);
  CHECK_THROWS_AS(w.end_object(), Error);
  w.begin_object();
  CHECK_THROWS_AS(w.value(1), Error);  // a member needs a key
  CHECK_THROWS_AS(w.end_array(), Error);
  w.field("k", 1);
  CHECK_THROWS_AS(w.field("k", 2), Error);  // duplicate key
  w.end_object();
  CHECK_THROWS_AS(w.begin_object(), Error);  // a second document
}

TEST_CASE("JsonWriter output is valid JSON that Python reads back", "[core][json]") {
  JsonWriter w;
  w.begin_object().field("x", 0.1).field("tab\t", "\x01").field("u", std::numeric_limits<std::uint64_t>::max()).end_object();
  const auto dir = std::filesystem::temp_directory_path() / ("usp_json_" + std::to_string(::getpid()));
  const std::string path = (dir / "sub" / "s.json").string();
  w.write_file(path);  // creates the missing parent directories
  const std::string cmd = "python3 -c \"import json,sys; d=json.load(open('" + path +
                          "')); sys.exit(0 if d['x']==0.1 and d['tab\\t']=='\\x01' and d['u']==2**64-1 else 1)\"";
  CHECK(std::system(cmd.c_str()) == 0);
  std::filesystem::remove_all(dir);
  JsonWriter open;
  open.begin_array();
  CHECK_THROWS(open.write_file(path));
  CHECK_FALSE(std::filesystem::exists(path));
}
