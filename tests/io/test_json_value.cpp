// The strict JSON reader: every value kind, every escape, exact integers, and each malformed
// input refused with the byte where it goes wrong.
#include <catch2/catch.hpp>

#include <string>

#include "common/io/json_value.hpp"

using namespace usp;

TEST_CASE("parse_json reads every kind of value, keeping member order", "[io][json]") {
  const JsonValue v = parse_json(
      " {\"b\": [1, -2.5, 3e2, 0, -0.0, 1E-5], \"a\": {\"t\": true, \"f\": false, \"n\": null},"
      " \"s\": \"x\", \"empty\": [], \"o\": {}} \n",
      "test");
  REQUIRE(v.is_object());
  REQUIRE(v.size() == 5);
  CHECK(v.members()[0].first == "b");  // file order, not sorted
  CHECK(v.members()[1].first == "a");
  const auto& b = v.at("b").items();
  REQUIRE(b.size() == 6);
  CHECK(b[0].as_int64() == 1);
  CHECK(b[1].as_double() == -2.5);
  CHECK(b[2].as_double() == 300.0);
  CHECK(b[3].as_int64() == 0);
  CHECK(b[4].number_text() == "-0.0");
  CHECK(b[5].as_double() == 1e-5);
  CHECK(v.at("a").at("t").as_bool());
  CHECK_FALSE(v.at("a").at("f").as_bool());
  CHECK(v.at("a").at("n").is_null());
  CHECK(v.at("s").as_string() == "x");
  CHECK(v.at("empty").is_array());
  CHECK(v.at("empty").size() == 0);
  CHECK(v.at("o").is_object());
  CHECK(v.find("missing") == nullptr);
  CHECK_THROWS_WITH(v.at("missing"), Catch::Contains("missing key 'missing'"));
}

TEST_CASE("parse_json decodes escapes and \\u code points to UTF-8", "[io][json]") {
  const JsonValue v = parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00")", "test");
  // é = C3 A9, € = E2 82 AC, U+1F600 = F0 9F 98 80 (from the surrogate pair D83D DE00).
  CHECK(v.as_string() == std::string("q\" b\\ s/ \b\f\n\r\t A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  // Raw UTF-8 passes through unchanged.
  CHECK(parse_json("\"\xC3\xA9\"", "test").as_string() == "\xC3\xA9");
}

TEST_CASE("JSON integers convert exactly, beyond a double's 53 bits", "[io][json]") {
  CHECK(parse_json("9007199254740993", "t").as_int64() == 9007199254740993LL);  // 2^53 + 1
  CHECK(parse_json("-9223372036854775808", "t").as_int64() == INT64_MIN);
  CHECK(parse_json("18446744073709551615", "t").as_uint64() == UINT64_MAX);
  CHECK_THROWS_WITH(parse_json("18446744073709551616", "t").as_uint64(), Catch::Contains("does not fit in 64 bits"));
  CHECK_THROWS_WITH(parse_json("1.5", "t").as_int64(), Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(parse_json("-1", "t").as_uint64(), Catch::Contains("expected an unsigned integer"));
  CHECK_THROWS_WITH(parse_json("\"1\"", "t").as_int64(), Catch::Contains("expected an integer, got string"));
  CHECK_THROWS_AS(parse_json("[]", "t").as_string(), UsageError);
}

TEST_CASE("malformed JSON is refused with the byte position of the problem", "[io][json]") {
  struct Case {
    std::string text;
    std::string expected;  // the message, from "byte N:" on
  };
  const Case cases[] = {
      {"", "byte 0: unexpected end of input, expected a value"},
      {"{\"a\":1,}", "byte 7: expected a string key"},
      {"[1 2]", "byte 3: expected ',' or ']' in an array"},
      {"[1,", "byte 3: unexpected end of input, expected a value"},
      {"{\"a\" 1}", "byte 5: expected ':' after key 'a'"},
      {"{\"a\":1", "byte 6: unexpected end of input in an object"},
      {"01", "byte 0: leading zero in a number"},
      {"-", "byte 1: expected a digit"},
      {"1.", "byte 2: expected a digit after '.'"},
      {"1e+", "byte 3: expected a digit in the exponent"},
      {"NaN", "byte 0: unexpected 'N', expected a value"},
      {"tru", "byte 0: invalid literal (expected 'true')"},
      {"nul1", "byte 0: invalid literal (expected 'null')"},
      {"1 x", "byte 2: unexpected 'x' after the value"},
      {"{} {}", "byte 3: unexpected '{' after the value"},
      {"\"ab", "byte 0: unterminated string"},
      {"\"a\nb\"", "byte 2: control character \\x0a inside a string"},
      {"\"\\x\"", "byte 1: invalid escape '\\x'"},
      {"\"\\u12G4\"", "byte 5: invalid hex digit 'G' in a \\u escape"},
      {"\"\\ud800\"", "byte 1: unpaired high surrogate in a \\u escape"},
      {"\"\\udc00\"", "byte 1: unpaired low surrogate in a \\u escape"},
      {"{\"a\":1,\"a\":2}", "byte 7: duplicate key 'a'"},
      {"[1,]", "byte 3: unexpected ']', expected a value"},
      {"// c\n1", "byte 0: unexpected '/', expected a value"},
  };
  for (const Case& c : cases) {
    INFO("input: " << c.text);
    CHECK_THROWS_AS(parse_json(c.text, "f.json"), UsageError);
    CHECK_THROWS_WITH(parse_json(c.text, "f.json"), "f.json: JSON error at " + c.expected);
  }
}

TEST_CASE("deep nesting is refused, not a stack overflow", "[io][json]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(parse_json(deep, "deep"), Catch::Contains("nesting deeper than 512"));
  const std::string ok = std::string(500, '[') + std::string(500, ']');
  CHECK(parse_json(ok, "ok").is_array());
}

TEST_CASE("read_json_file names a missing file", "[io][json]") {
  CHECK_THROWS_WITH(read_json_file("/nonexistent/usp.json", "config file"),
                    "config file '/nonexistent/usp.json' not found");
}
