// TextCorpus: the bytes of a file as tokens (byte-level: token = byte, vocab 256).
//
// Training samples: sample i of step s is the seq + 1 bytes starting at offset
//   o = u64(Philox(seed, "data") at counter s·2^32 + i) mod (size - seq),
// so o ranges over every valid start 0 .. size - seq - 1 (a pure function of (seed, s, i)).
//
// Evaluation: SequentialWindows walks the file in order as non-overlapping windows of seq + 1
// bytes, window w = bytes [w·(seq+1), (w+1)·(seq+1)); the tail shorter than a window is left
// out. Deterministic and independent of the seed: usp_eval's loss is a function of the
// checkpoint and the file only.
//
// The file is read once, whole, into host memory (it is the data set, not tensor data, so it
// is not counted by the MemoryTracker). A missing file, or one shorter than seq + 1 bytes,
// throws UsageError naming the path.
#pragma once
#include <cstdint>
#include <string>

#include "common/data/dataset.hpp"

namespace usp {

class TextCorpus : public Dataset {
 public:
  TextCorpus(const std::string& path, std::uint64_t seed);

  std::int64_t vocab() const override { return 256; }
  std::string spec() const override { return "text:" + path_; }
  std::uint64_t seed() const override { return seed_; }
  // UsageError "text file 'x' has 10 bytes; need at least seq+1 = 129" when too short.
  void check_seq(std::int64_t seq) const override;
  void sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const override;

  const std::string& path() const { return path_; }
  std::int64_t size() const { return static_cast<std::int64_t>(bytes_.size()); }
  // The byte at offset o as a token.
  std::int32_t token(std::int64_t o) const { return static_cast<unsigned char>(bytes_[static_cast<std::size_t>(o)]); }
  // Where sample (step, index) starts, for tests.
  std::int64_t sample_offset(std::int64_t step, std::int64_t index, std::int64_t seq) const;

 private:
  std::string path_;
  std::uint64_t seed_;
  std::string bytes_;
};

// Every non-overlapping window of seq + 1 bytes of a text, in file order, batch_size at a
// time (the last batch may be smaller).
//   SequentialWindows windows(corpus, seq, 8);
//   for (Batch b; windows.next(b);) loss += model.evaluate(b.inputs, b.targets) * b.inputs.dim(0);
class SequentialWindows {
 public:
  SequentialWindows(const TextCorpus& corpus, std::int64_t seq, std::int64_t batch_size);

  std::int64_t num_windows() const { return num_windows_; }
  std::int64_t seq() const { return seq_; }
  // The next batch of windows ([count, seq] inputs and targets); false when none are left.
  bool next(Batch& out);
  void reset() { next_window_ = 0; }

 private:
  const TextCorpus& corpus_;
  std::int64_t seq_, batch_size_, num_windows_, next_window_ = 0;
};

}  // namespace usp
