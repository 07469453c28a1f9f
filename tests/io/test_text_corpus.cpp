// Byte-level text: samples are real windows of the file at rng-chosen offsets covering every
// valid start, sequential evaluation windows tile the file in order, and bad files are named.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/data/synthetic_corpus.hpp"
#include "common/data/text_corpus.hpp"
#include "tests/io/io_fixtures.hpp"

using namespace usp;
using usp::testing::TempDir;
using usp::testing::write_file;

namespace {

// Bytes 0..n-1 with every value 0..255 (bytes >= 128 must become tokens 128..255, not negative).
std::string byte_ramp(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 37 + 11) % 256);
  return s;
}

}  // namespace

TEST_CASE("text corpus: missing, non-regular and too-short files are named", "[io][data]") {
  TempDir dir("text_bad");
  CHECK_THROWS_AS(TextCorpus(dir / "nope.txt", 1), UsageError);
  CHECK_THROWS_WITH(TextCorpus(dir / "nope.txt", 1), "text file '" + (dir / "nope.txt") + "' not found");
  CHECK_THROWS_WITH(TextCorpus(dir.str(), 1), "text file '" + dir.str() + "' is a directory");
  CHECK_THROWS_WITH(TextCorpus("/dev/zero", 1), Catch::Contains("is not a regular file"));
  const std::string path = dir / "short.txt";
  write_file(path, "0123456789");
  const TextCorpus t(path, 1);
  CHECK(t.size() == 10);
  // Training reads the 9 bytes before the held-out last tenth (1 byte); usp_eval's windows the 10.
  const std::string message = "text file '" + path + "' has 10 bytes, 9 before the held-out last tenth; need at least seq+1 = 129";
  CHECK_THROWS_WITH(t.check_seq(128), message);
  CHECK_THROWS_WITH(t.batch(0, 0, 1, 128), message);
  CHECK_THROWS_WITH(t.check_seq(9), Catch::Contains("9 before the held-out last tenth; need at least seq+1 = 10"));
  CHECK_THROWS_WITH(SequentialWindows(t, 128, 4), "text file '" + path + "' has 10 bytes; need at least seq+1 = 129");
  CHECK_NOTHROW(SequentialWindows(t, 9, 4));  // the whole file: exactly seq + 1 bytes is enough
  CHECK_NOTHROW(t.check_seq(8));              // exactly seq + 1 training bytes is enough
  const Batch b = t.batch(3, 5, 2, 8);  // the only training window: offset 0
  for (std::int64_t j = 0; j < 8; ++j) {
    CHECK(b.inputs.data<std::int32_t>()[j] == '0' + j);
    CHECK(b.targets.data<std::int32_t>()[8 + j] == '1' + j);
  }
}

TEST_CASE("text corpus: the last tenth is held out, never trained on, read as windows in order", "[io][data]") {
  TempDir dir("text_held_out");
  const std::string path = dir / "ramp.bin";
  write_file(path, byte_ramp(250));  // held out: bytes 225..249 (25 bytes)
  const TextCorpus t(path, 3);
  CHECK(t.held_out_begin() == 225);
  constexpr std::int64_t seq = 7;  // windows of 8 bytes: 225, 233, 241 (3 of them; 1 byte left over)
  CHECK(t.held_out_windows(seq) == 3);
  for (std::int64_t i = 0; i < 4096; ++i) {  // no training sample reaches byte 225
    const std::int64_t o = t.sample_offset(i / 64, i % 64, seq);
    REQUIRE(o + seq < 225);
  }
  const Batch h = t.held_out_batch(1, 2, seq);  // windows 1 and 2: bytes 233..240 and 241..248
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t j = 0; j < seq; ++j) {
      CHECK(h.inputs.data<std::int32_t>()[r * seq + j] == ((233 + 8 * r + j) * 37 + 11) % 256);  // byte_ramp's byte
      CHECK(h.targets.data<std::int32_t>()[r * seq + j] == ((234 + 8 * r + j) * 37 + 11) % 256);
    }
  CHECK_THROWS_WITH(t.held_out_batch(2, 2, seq),
                    Catch::Contains("(25 bytes) has 3 windows of seq+1 = 8 bytes; validation asked for window 3"));
  // Counts of one read singular: 1 window (of 8 bytes in a held-out 10, of 25 in 25), a file of 1 byte.
  const std::string short_ramp = dir / "short_ramp.bin", one_byte = dir / "one_byte.bin";
  write_file(short_ramp, byte_ramp(100));
  CHECK_THROWS_WITH(TextCorpus(short_ramp, 3).held_out_batch(1, 1, seq),
                    Catch::Contains("(10 bytes) has 1 window of seq+1 = 8 bytes; validation asked for window 1"));
  CHECK_THROWS_WITH(TextCorpus(path, 3).held_out_batch(1, 1, 24),  // 25 held-out bytes, windows of 25
                    Catch::Contains("(25 bytes) has 1 window of seq+1 = 25 bytes; validation asked for window 1"));
  write_file(one_byte, "x");
  const TextCorpus tiny(one_byte, 3);
  CHECK_THROWS_WITH(SequentialWindows(tiny, 1, 1), "text file '" + one_byte + "' has 1 byte; need at least seq+1 = 2");
  CHECK_THROWS_WITH(tiny.check_seq(1), "text file '" + one_byte +
                                           "' has 1 byte, 1 before the held-out last tenth; need at least seq+1 = 2");
  // The synthetic corpus holds out a step no training reaches.
  const auto synthetic = make_dataset("synthetic", 3);
  const Batch v = synthetic->held_out_batch(0, 2, seq), last = synthetic->batch(Dataset::kHeldOutStep - 1, 0, 2, seq);
  CHECK(std::memcmp(v.inputs.raw(), last.inputs.raw(), v.inputs.nbytes()) != 0);
  CHECK_THROWS_WITH(synthetic->batch(Dataset::kHeldOutStep, 0, 1, seq), Catch::Contains("the last step is held out"));
}

TEST_CASE("text corpus: samples are the file's bytes at offsets covering every start", "[io][data][stats]") {
  TempDir dir("text_samples");
  const std::string path = dir / "ramp.bin";
  const std::string bytes = byte_ramp(40);
  write_file(path, bytes);
  const TextCorpus t(path, 77);
  CHECK(t.vocab() == 256);
  CHECK(t.spec() == "text:" + path);
  // 36 bytes before the held-out 4: 28 valid starts, 100 expected each.
  constexpr std::int64_t seq = 8, kSamples = 2800;
  std::vector<std::int64_t> hits(40, 0);
  std::vector<std::int32_t> s(seq + 1);
  std::int64_t mismatched = 0;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const std::int64_t o = t.sample_offset(i / 64, i % 64, seq);
    REQUIRE(o >= 0);
    REQUIRE(o <= 36 - seq - 1);
    ++hits[static_cast<std::size_t>(o)];
    t.sample(i / 64, i % 64, seq, s.data());
    for (std::int64_t j = 0; j <= seq; ++j)
      mismatched += s[static_cast<std::size_t>(j)] != static_cast<unsigned char>(bytes[static_cast<std::size_t>(o + j)]);
  }
  CHECK(mismatched == 0);
  // Offsets uniform over the 28 starts: chi-square with 27 dof (mean 27, sd 7.3), mean + 5 sd.
  double chi2 = 0;
  for (std::int64_t o = 0; o < 28; ++o) {
    const double d = static_cast<double>(hits[static_cast<std::size_t>(o)]) - 100.0;
    chi2 += d * d / 100.0;
  }
  INFO("chi-square " << chi2);
  CHECK(chi2 < 27 + 5 * std::sqrt(54.0));
  // Tokens are unsigned bytes.
  const Batch b = t.batch(0, 0, 64, seq);
  for (std::int64_t i = 0; i < b.inputs.numel(); ++i) {
    CHECK(b.inputs.data<std::int32_t>()[i] >= 0);
    CHECK(b.inputs.data<std::int32_t>()[i] < 256);
  }
}

TEST_CASE("text corpus: pure in (seed, step, index); slices match the global batch", "[io][data]") {
  TempDir dir("text_pure");
  const std::string path = dir / "ramp.bin";
  write_file(path, byte_ramp(5000));
  const TextCorpus t(path, 5), again(path, 5), other(path, 6);
  constexpr std::int64_t seq = 16, B = 6;
  CHECK(t.sample_offset(2, 3, seq) == again.sample_offset(2, 3, seq));
  CHECK(t.sample_offset(2, 3, seq) != t.sample_offset(2, 4, seq));
  CHECK(t.sample_offset(2, 3, seq) != t.sample_offset(3, 3, seq));
  CHECK(t.sample_offset(2, 3, seq) != other.sample_offset(2, 3, seq));
  const Batch global = t.batch(2, 0, B, seq);
  for (int ranks : {2, 3, 6}) {
    const std::int64_t b = B / ranks;
    for (int r = 0; r < ranks; ++r) {
      const Batch mine = t.batch(2, r * b, b, seq);
      CHECK(std::memcmp(mine.inputs.raw(), global.inputs.data<std::int32_t>() + r * b * seq, mine.inputs.nbytes()) == 0);
      CHECK(std::memcmp(mine.targets.raw(), global.targets.data<std::int32_t>() + r * b * seq, mine.targets.nbytes()) == 0);
    }
  }
}

TEST_CASE("sequential windows tile the file in order, seq + 1 bytes each", "[io][data]") {
  TempDir dir("text_windows");
  const std::string path = dir / "w.bin";
  const std::string bytes = byte_ramp(105);  // 10 windows of 10 bytes, a 5-byte tail left out
  write_file(path, bytes);
  const TextCorpus t(path, 0);
  SequentialWindows windows(t, 9, 4);
  CHECK(windows.num_windows() == 10);
  std::vector<std::int64_t> sizes;
  std::int64_t w = 0;
  for (Batch b; windows.next(b);) {
    sizes.push_back(b.inputs.dim(0));
    REQUIRE(b.inputs.shape() == Shape{b.inputs.dim(0), 9});
    for (std::int64_t r = 0; r < b.inputs.dim(0); ++r, ++w)
      for (std::int64_t j = 0; j < 9; ++j) {
        CHECK(b.inputs.data<std::int32_t>()[r * 9 + j] == static_cast<unsigned char>(bytes[static_cast<std::size_t>(w * 10 + j)]));
        CHECK(b.targets.data<std::int32_t>()[r * 9 + j] ==
              static_cast<unsigned char>(bytes[static_cast<std::size_t>(w * 10 + j + 1)]));
      }
  }
  CHECK(sizes == std::vector<std::int64_t>{4, 4, 2});
  CHECK(w == 10);
  Batch again;
  windows.reset();
  CHECK(windows.next(again));
  CHECK(again.inputs.dim(0) == 4);
  CHECK_THROWS_WITH(SequentialWindows(t, 9, 0), Catch::Contains("batch size must be >= 1"));
}

TEST_CASE("make_dataset builds the named source", "[io][data]") {
  TempDir dir("make_dataset");
  const std::string path = dir / "t.txt";
  write_file(path, "hello, world");
  const auto syn = make_dataset("synthetic", 3);
  CHECK(syn->spec() == "synthetic");
  CHECK(syn->vocab() == 256);
  CHECK(syn->seed() == 3);
  CHECK(dynamic_cast<const SyntheticCorpus*>(syn.get()) != nullptr);
  const auto text = make_dataset("text:" + path, 4);
  CHECK(text->spec() == "text:" + path);
  CHECK(text->seed() == 4);
  REQUIRE(dynamic_cast<const TextCorpus*>(text.get()) != nullptr);
  CHECK(dynamic_cast<const TextCorpus*>(text.get())->size() == 12);
  // The spec round-trips: what a trainer state records rebuilds the same data.
  const Batch a = text->batch(1, 0, 2, 4), b = make_dataset(text->spec(), 4)->batch(1, 0, 2, 4);
  CHECK(std::memcmp(a.inputs.raw(), b.inputs.raw(), a.inputs.nbytes()) == 0);
  // The lessons: the course's README, architecture and every chapter's lesson, in that order.
  const auto lessons = make_dataset("lessons", 5);
  const auto* lt = dynamic_cast<const TextCorpus*>(lessons.get());
  REQUIRE(lt != nullptr);
  CHECK(lt->size() > 100000);
  CHECK(lt->token(0) == '#');  // README.md's title line
  CHECK(lt->held_out_windows(255) > 100);
  CHECK_THROWS_WITH(make_dataset("text:", 1), "data 'text:' needs a file name (text:PATH)");
  CHECK_THROWS_WITH(make_dataset("wiki", 1), "data must be 'synthetic', 'lessons' or 'text:PATH', got 'wiki'");
  CHECK_THROWS_WITH(make_dataset("text:" + (dir / "missing"), 1), "text file '" + (dir / "missing") + "' not found");
}
