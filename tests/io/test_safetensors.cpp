// Safetensors against the format's specification, not just against ourselves: a file assembled
// byte by byte in the test reads back right, the writer produces exactly the bytes the spec
// prescribes, and every kind of damage is reported with the file's name.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "common/io/safetensors.hpp"
#include "tests/io/io_fixtures.hpp"

using namespace usp;
using usp::testing::TempDir;
using usp::testing::u64_le;
using usp::testing::write_file;
using usp::testing::read_file;

namespace {

// Header padded with spaces so that 8 + N is a multiple of 8, as the spec's writer does.
std::string padded(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

std::string file_bytes(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

// A header of one F32 tensor "x" of shape [n] at [begin, end).
std::string one_tensor(const std::string& dtype, const std::string& shape, std::uint64_t begin, std::uint64_t end) {
  return "{\"x\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) +
         "," + std::to_string(end) + "]}}";
}

}  // namespace

TEST_CASE("a safetensors file written byte by byte from the spec reads back", "[io][safetensors]") {
  TempDir dir("st_hand");
  // Data buffer, little-endian:
  //   a F32 [2]     1.0 = 0x3F800000, -2.5 = 0xC0200000                 bytes [0, 8)
  //   b I32 [1, 2]  7, -1                                               bytes [8, 16)
  //   c BF16 [3]    1.0 = 0x3F80, 0.5 = 0x3F00, -2.0 = 0xC000           bytes [16, 22)
  //   d F16 [1]     1.0 = 0x3C00                                        bytes [22, 24)
  //   e F8_E4M3 [2] 1.0 = 0x38 (0 0111 000), -2.0 = 0xC0 (1 1000 000)  bytes [24, 26)
  //   f F8_E5M2 [1] 1.0 = 0x3C (0 01111 00)                             bytes [26, 27)
  //   g F32 []      a scalar, 0.25 = 0x3E800000                         bytes [27, 31)
  const std::string data = std::string("\x00\x00\x80\x3F\x00\x00\x20\xC0", 8) +
                           std::string("\x07\x00\x00\x00\xFF\xFF\xFF\xFF", 8) +
                           std::string("\x80\x3F\x00\x3F\x00\xC0", 6) + std::string("\x00\x3C", 2) +
                           std::string("\x38\xC0", 2) + std::string("\x3C", 1) + std::string("\x00\x00\x80\x3E", 4);
  // Keys out of offset order, whitespace between tokens, metadata last: all allowed.
  const std::string header = padded(
      "{\"b\": {\"dtype\": \"I32\", \"shape\": [1, 2], \"data_offsets\": [8, 16]},\n"
      " \"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"c\":{\"shape\":[3],\"dtype\":\"BF16\",\"data_offsets\":[16,22]},"
      "\"d\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[22,24]},"
      "\"e\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[24,26]},"
      "\"f\":{\"dtype\":\"F8_E5M2\",\"shape\":[1],\"data_offsets\":[26,27]},"
      "\"g\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[27,31]},"
      "\"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9\"}}");
  const std::string path = dir / "hand.safetensors";
  write_file(path, file_bytes(header, data));

  const SafetensorsFile f(path);
  REQUIRE(f.entries().size() == 7);
  CHECK(f.entries()[0].name == "b");  // header order
  CHECK(f.data_offset() == 8 + header.size());
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.metadata().at("note") == "caf\xC3\xA9");

  const Tensor a = f.read("a");
  CHECK(a.dtype() == DType::f32);
  CHECK(a.shape() == Shape{2});
  CHECK(a.to_floats() == std::vector<float>{1.0f, -2.5f});
  const Tensor b = f.read("b");
  CHECK(b.dtype() == DType::i32);
  CHECK(b.shape() == Shape{1, 2});
  CHECK(b.data<std::int32_t>()[0] == 7);
  CHECK(b.data<std::int32_t>()[1] == -1);
  CHECK(f.read("c").to_floats() == std::vector<float>{1.0f, 0.5f, -2.0f});
  CHECK(f.read("c").dtype() == DType::bf16);
  CHECK(f.read("d").to_floats() == std::vector<float>{1.0f});
  CHECK(f.read("d").dtype() == DType::f16);
  CHECK(f.read("e").to_floats() == std::vector<float>{1.0f, -2.0f});
  CHECK(f.read("e").dtype() == DType::e4m3);
  CHECK(f.read("f").to_floats() == std::vector<float>{1.0f});
  CHECK(f.read("f").dtype() == DType::e5m2);
  CHECK(f.read("g").shape().empty());
  CHECK(f.read("g").to_floats() == std::vector<float>{0.25f});
}

TEST_CASE("the writer produces exactly the bytes the spec prescribes", "[io][safetensors]") {
  TempDir dir("st_write");
  Tensor a = Tensor::from_floats({1.0f, -2.5f}, {2});
  Tensor b = Tensor::empty({1, 2}, DType::i32);
  b.data<std::int32_t>()[0] = 7;
  b.data<std::int32_t>()[1] = -1;
  Tensor c = Tensor::from_floats({1.0f, 0.5f, -2.0f}, {3}, DType::bf16);
  const std::string path = dir / "w.safetensors";
  write_safetensors(path, {{"b", b}, {"a", a}, {"c", c}}, {{"format", "pt"}});

  // Given order; offsets contiguous in that order; header padded to 8 + N ≡ 0 (mod 8).
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"b\":{\"dtype\":\"I32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"c\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]}}";
  const std::string data = std::string("\x07\x00\x00\x00\xFF\xFF\xFF\xFF", 8) +
                           std::string("\x00\x00\x80\x3F\x00\x00\x20\xC0", 8) +
                           std::string("\x80\x3F\x00\x3F\x00\xC0", 6);
  const std::string bytes = read_file(path);
  CHECK(bytes == file_bytes(padded(header), data));
  CHECK((bytes.size() - data.size()) % 8 == 0);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("safetensors round trip of every dtype, empty and scalar tensors", "[io][safetensors]") {
  TempDir dir("st_round");
  std::vector<NamedTensor> tensors;
  const std::vector<float> values = {0.0f, -1.5f, 3.25f, 448.0f, -0.125f, 1e-3f};
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::e4m3, DType::e5m2})
    tensors.push_back({std::string("t_") + dtype_name(t), Tensor::from_floats(values, {2, 3}, t)});
  Tensor ints = Tensor::empty({3}, DType::i32);
  for (int i = 0; i < 3; ++i) ints.data<std::int32_t>()[i] = (i - 1) * 2147483647;
  tensors.push_back({"ints", ints});
  tensors.push_back({"empty", Tensor::empty({0, 4}, DType::f32)});
  tensors.push_back({"scalar", Tensor::from_floats({42.0f}, {})});
  const std::string path = dir / "r.safetensors";
  write_safetensors(path, tensors);

  const SafetensorsFile f(path);
  CHECK(f.metadata().empty());
  REQUIRE(f.entries().size() == tensors.size());
  for (const NamedTensor& t : tensors) {
    INFO(t.name);
    const Tensor back = f.read(t.name);
    CHECK(back.dtype() == t.tensor.dtype());
    CHECK(back.shape() == t.tensor.shape());
    REQUIRE(back.nbytes() == t.tensor.nbytes());
    CHECK(std::memcmp(back.raw(), t.tensor.raw(), back.nbytes()) == 0);
  }
  // read_into checks dtype and shape.
  Tensor dst = Tensor::empty({2, 3}, DType::f32);
  f.read_into("t_f32", dst);
  CHECK(std::memcmp(dst.raw(), tensors[0].tensor.raw(), dst.nbytes()) == 0);
  CHECK_THROWS_WITH(f.read_into("t_bf16", dst), Catch::Contains("tensor 't_bf16' is BF16 [2, 3], expected F32 [2, 3]"));
  Tensor wrong_shape = Tensor::empty({3, 2}, DType::f32);
  CHECK_THROWS_WITH(f.read_into("t_f32", wrong_shape), Catch::Contains("is F32 [2, 3], expected F32 [3, 2]"));
  CHECK_THROWS_WITH(f.read("nope"), "safetensors file '" + path + "' has no tensor 'nope'");
}

TEST_CASE("damaged safetensors files are refused, naming the file and the problem", "[io][safetensors]") {
  TempDir dir("st_bad");
  const std::string path = dir / "bad.safetensors";
  const std::string me = "safetensors file '" + path + "'";
  const std::string eight(8, '\x01');
  auto expect = [&](const std::string& bytes, const std::string& message) {
    write_file(path, bytes);
    CHECK_THROWS_AS(SafetensorsFile(path), UsageError);
    CHECK_THROWS_WITH(SafetensorsFile(path), Catch::Contains(me) && Catch::Contains(message));
  };

  CHECK_THROWS_WITH(SafetensorsFile(dir / "missing.safetensors"),
                    "safetensors file '" + (dir / "missing.safetensors") + "' not found");
  expect("", "is truncated: 0 bytes, less than the 8-byte header length");
  expect(std::string("\x10\x00\x00", 3), "is truncated: 3 bytes");
  expect(u64_le(64) + "{}", "is truncated: the header needs 64 bytes but only 2 follow");
  expect(u64_le(std::uint64_t{1} << 40) + "{}", "header length 1099511627776 exceeds the format's 100 MB limit");
  expect(file_bytes(padded("[1, 2]"), ""), "the header does not start with '{'");
  expect(file_bytes(padded("{\"x\": }"), ""), "header: JSON error at line 1, column 7: syntax error while parsing value - unexpected '}'");

  // A complete one-tensor file, then damaged in turn.
  const std::string good = file_bytes(padded(one_tensor("F32", "[2]", 0, 8)), eight);
  write_file(path, good);
  CHECK(SafetensorsFile(path).read("x").numel() == 2);
  expect(good.substr(0, good.size() - 3), "is truncated: tensor 'x' needs data bytes [0, 8) but the file holds 5");
  expect(good + "xyz", "is corrupt: 3 bytes after the last tensor's data");
  expect(file_bytes(padded(one_tensor("F64", "[1]", 0, 8)), eight), "tensor 'x': dtype F64 is not supported");
  expect(file_bytes(padded(one_tensor("F32", "[3]", 0, 8)), eight),
         "data_offsets [0, 8) hold 8 bytes, but shape [3] of F32 needs 12");
  expect(file_bytes(padded(one_tensor("F32", "[2]", 8, 0)), eight), "data_offsets end < begin");
  expect(file_bytes(padded(one_tensor("F32", "[-2]", 0, 8)), eight), "shape entries must be non-negative integers");
  expect(file_bytes(padded(one_tensor("F32", "[4294967296, 4294967296]", 0, 8)), eight), "shape is too large");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}"), eight),
         "entry needs dtype, shape and data_offsets");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}"), eight),
         "unexpected key 'extra'");
  expect(file_bytes(padded("{\"__metadata__\":{\"k\":1}}"), ""), "__metadata__ value of 'k' must be a string");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}"), eight),
         "tensor 'x': data_offsets must be [begin, end], two non-negative integers");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}"), eight),
         "shape entries must be non-negative integers");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"x\":{}}"), eight),
         "header: JSON error: duplicate key 'x'");
  // A hole (bytes [0, 4) belong to no tensor) and an overlap.
  expect(file_bytes(padded(one_tensor("F32", "[1]", 4, 8)), eight), "tensor 'x' starts at data byte 4, leaving a hole");
  expect(file_bytes(padded("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                           "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}"),
                    eight),
         "tensor 'y' starts at data byte 4, overlapping the previous tensor");
}
