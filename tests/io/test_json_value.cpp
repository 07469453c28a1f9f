// The strict JSON reader (nlohmann's parser plus our checks): every value kind, every escape,
// exact integers, and each malformed input refused, naming the file and where it goes wrong.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <iterator>
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
  CHECK(v.begin().key() == "b");  // file order, not sorted
  CHECK(std::next(v.begin()).key() == "a");
  const JsonValue& b = v.at("b");
  REQUIRE(b.size() == 6);
  CHECK(json_int64(b[0]) == 1);
  CHECK(json_double(b[1]) == -2.5);
  CHECK(json_double(b[2]) == 300.0);
  CHECK(b[2].is_number_float());  // 3e2 is a float literal, not an integer
  CHECK(json_int64(b[3]) == 0);
  CHECK(std::signbit(json_double(b[4])));
  CHECK(json_double(b[5]) == 1e-5);
  CHECK(v.at("a").at("t").get<bool>());
  CHECK_FALSE(v.at("a").at("f").get<bool>());
  CHECK(v.at("a").at("n").is_null());
  CHECK(json_string(v.at("s")) == "x");
  CHECK(v.at("empty").is_array());
  CHECK(v.at("empty").empty());
  CHECK(v.at("o").is_object());
  CHECK_FALSE(v.contains("missing"));
}

TEST_CASE("parse_json decodes escapes and \\u code points to UTF-8", "[io][json]") {
  const JsonValue v = parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00")", "test");
  // é = C3 A9, € = E2 82 AC, U+1F600 = F0 9F 98 80 (from the surrogate pair D83D DE00).
  CHECK(json_string(v) == std::string("q\" b\\ s/ \b\f\n\r\t A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  // Raw UTF-8 passes through unchanged.
  CHECK(json_string(parse_json("\"\xC3\xA9\"", "test")) == "\xC3\xA9");
}

TEST_CASE("JSON integers convert exactly, beyond a double's 53 bits, and never silently", "[io][json]") {
  CHECK(json_int64(parse_json("9007199254740993", "t")) == 9007199254740993LL);  // 2^53 + 1
  CHECK(json_int64(parse_json("-9223372036854775808", "t")) == INT64_MIN);
  CHECK(json_int64(parse_json("9223372036854775807", "t")) == INT64_MAX);
  CHECK(json_uint64(parse_json("18446744073709551615", "t")) == UINT64_MAX);
  CHECK_THROWS_WITH(json_int64(parse_json("9223372036854775808", "t")),
                    "JSON: integer 9223372036854775808 does not fit in int64");
  // Beyond 64 bits nlohmann keeps a double: it is then no integer at all.
  CHECK_THROWS_WITH(json_uint64(parse_json("18446744073709551616", "t")),
                    Catch::StartsWith("JSON: expected an unsigned integer, got 1.8446744073709552e+19"));
  CHECK_THROWS_WITH(json_int64(parse_json("1.5", "t")), "JSON: expected an integer, got 1.5");
  CHECK_THROWS_WITH(json_int64(parse_json("1.0", "t")), "JSON: expected an integer, got 1.0");
  CHECK_THROWS_WITH(json_uint64(parse_json("-1", "t")), "JSON: expected an unsigned integer, got -1");
  CHECK_THROWS_WITH(json_int64(parse_json("\"1\"", "t")), "JSON: expected an integer, got string");
  CHECK_THROWS_WITH(json_double(parse_json("null", "t")), "JSON: expected a number, got null");
  CHECK_THROWS_AS(json_string(parse_json("[]", "t")), UsageError);
}

TEST_CASE("malformed JSON is refused with the line and column of the problem", "[io][json]") {
  struct Case {
    std::string text;
    std::string expected;  // the start of the message after "f.json: JSON error "
  };
  const Case cases[] = {
      {"", "at line 1, column 1: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal"},
      {"{\"a\":1,}", "at line 1, column 8: syntax error while parsing object key - unexpected '}'"},
      {"[1 2]", "at line 1, column 4: syntax error while parsing array - unexpected number literal"},
      {"[1,", "at line 1, column 4: syntax error while parsing value - unexpected end of input"},
      {"{\"a\" 1}", "at line 1, column 6: syntax error while parsing object separator - unexpected number literal"},
      {"{\"a\":1", "at line 1, column 7: syntax error while parsing object - unexpected end of input"},
      {"01", "at line 1, column 2: syntax error while parsing value - unexpected number literal"},
      {"-", "at line 1, column 2: syntax error while parsing value - invalid number"},
      {"1.", "at line 1, column 3: syntax error while parsing value - invalid number"},
      {"1e+", "at line 1, column 4: syntax error while parsing value - invalid number"},
      {"NaN", "at line 1, column 1: syntax error while parsing value - invalid literal"},
      {"tru", "at line 1, column 4: syntax error while parsing value - invalid literal"},
      {"nul1", "at line 1, column 4: syntax error while parsing value - invalid literal"},
      {"1 x", "at line 1, column 3: syntax error while parsing value - invalid literal"},
      {"{} {}", "at line 1, column 4: syntax error while parsing value - unexpected '{'"},
      {"\"ab", "at line 1, column 4: syntax error while parsing value - invalid string: missing closing quote"},
      {"\"a\nb\"", "at line 2, column 0: syntax error while parsing value - invalid string: control character"},
      {"\"\\x\"", "at line 1, column 3: syntax error while parsing value - invalid string: forbidden character after backslash"},
      {"\"\\u12G4\"", "at line 1, column 6: syntax error while parsing value - invalid string: '\\u' must be followed by 4 hex digits"},
      {"\"\\ud800\"", "at line 1, column 8: syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"},
      {"\"\\udc00\"", "at line 1, column 7: syntax error while parsing value - invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF"},
      {"[1,]", "at line 1, column 4: syntax error while parsing value - unexpected ']'"},
      {"// c\n1", "at line 1, column 1: syntax error while parsing value - invalid literal"},
      {"\"\xFF\"", "at line 1, column 2: syntax error while parsing value - invalid string: ill-formed UTF-8 byte"},
  };
  for (const Case& c : cases) {
    INFO("input: " << c.text);
    CHECK_THROWS_AS(parse_json(c.text, "f.json"), UsageError);
    CHECK_THROWS_WITH(parse_json(c.text, "f.json"), Catch::StartsWith("f.json: JSON error " + c.expected));
  }
}

TEST_CASE("duplicate keys are refused, at any depth", "[io][json]") {
  CHECK_THROWS_WITH(parse_json("{\"a\":1,\"a\":2}", "f.json"), "f.json: JSON error: duplicate key 'a'");
  CHECK_THROWS_WITH(parse_json("[{\"x\":{\"a\":1}},{\"x\":{\"b\":1,\"b\":1}}]", "f.json"),
                    "f.json: JSON error: duplicate key 'b'");
  // The same key in different objects is fine.
  CHECK(parse_json("{\"a\":{\"a\":1},\"b\":{\"a\":2}}", "ok").size() == 2);
}

TEST_CASE("deep nesting is refused, not a stack overflow", "[io][json]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(parse_json(deep, "deep"), "deep: JSON error: nesting deeper than 512");
  const std::string ok = std::string(500, '[') + std::string(500, ']');
  CHECK(parse_json(ok, "ok").is_array());
}

TEST_CASE("read_json_file names a missing file", "[io][json]") {
  CHECK_THROWS_WITH(read_json_file("/nonexistent/usp.json", "config file"),
                    "config file '/nonexistent/usp.json' not found");
}
