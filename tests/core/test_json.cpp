// The JSON writer: nesting, commas, escaping, and numbers that survive a round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/json.hpp"

using namespace usp;

TEST_CASE("JsonWriter nests objects and arrays with correct commas", "[core][json]") {
  JsonWriter w;
  w.begin_object();
  w.field("name", "ring \"all\"\\reduce\n");
  w.key("losses").array(std::vector<double>{1.5, 0.25});
  w.key("memory").begin_array();
  w.begin_object().field("rank", 0).field("bytes", std::uint64_t{1} << 40).end_object();
  w.begin_object().field("rank", 1).field("ok", true).end_object();
  w.end_array();
  w.field("nan", std::nan(""));
  w.key("empty").begin_object().end_object();
  w.end_object();
  CHECK(w.str() ==
        "{\"name\":\"ring \\\"all\\\"\\\\reduce\\n\",\"losses\":[1.5,0.25],"
        "\"memory\":[{\"rank\":0,\"bytes\":1099511627776},{\"rank\":1,\"ok\":true}],"
        "\"nan\":null,\"empty\":{}}");
}

TEST_CASE("JsonWriter output is valid JSON that Python reads back", "[core][json]") {
  JsonWriter w;
  w.begin_object().field("x", 0.1).field("tab\t", "\x01").end_object();
  const auto dir = std::filesystem::temp_directory_path() / ("usp_json_" + std::to_string(::getpid()));
  const std::string path = (dir / "sub" / "s.json").string();
  w.write_file(path);  // creates the missing parent directories
  const std::string cmd = "python3 -c \"import json,sys; d=json.load(open('" + path +
                          "')); sys.exit(0 if d['x']==0.1 and d['tab\\t']=='\\x01' else 1)\"";
  CHECK(std::system(cmd.c_str()) == 0);
  std::filesystem::remove_all(dir);
  JsonWriter open;
  open.begin_array();
  CHECK_THROWS(open.write_file(path));
}
