// TextCorpus: the bytes of a file as tokens (byte-level: token = byte, vocab 256).
//
// Held out: the last tenth of the file, bytes [held_out_begin(), size) with held_out_begin() =
// size - floor(size / 10), is never sampled for training; held_out_batch() reads it as
// non-overlapping windows of seq + 1 bytes in file order, for a validation loss on text the
// model has not trained on.
//
// Training samples: sample i of step s is the seq + 1 bytes starting at offset
//   o = u64(Philox(seed, "data") at counter s·2^32 + i) mod (held_out_begin() - seq),
// so o ranges over every start whose sample ends before the held-out part (a pure function of
// (seed, s, i)).
//
// Evaluation: SequentialWindows walks the file in order as non-overlapping windows of seq + 1
// bytes, window w = bytes [w·(seq+1), (w+1)·(seq+1)); the tail shorter than a window is left
// out. Deterministic and independent of the seed: usp_eval's loss is a function of the
// checkpoint and the file only.
//
// The file is read once, whole, into host memory (it is the data set, not tensor data, so it
// is not counted by the MemoryTracker). A missing file, or one with fewer than seq + 1 bytes
// before its held-out part, throws UsageError naming the path.
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
  // UsageError "text file 'x' has 10 bytes, 9 before the held-out last tenth; need at least
  // seq+1 = 129" when too short.
  void check_seq(std::int64_t seq) const override;
  void sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const override;

  const std::string& path() const { return path_; }
  std::int64_t size() const { return static_cast<std::int64_t>(bytes_.size()); }
  // The byte at offset o as a token.
  std::int32_t token(std::int64_t o) const { return static_cast<unsigned char>(bytes_[static_cast<std::size_t>(o)]); }
  // Where sample (step, index) starts, for tests.
  std::int64_t sample_offset(std::int64_t step, std::int64_t index, std::int64_t seq) const;
  std::int64_t held_out_begin() const { return size() - size() / 10; }
  // Windows of seq + 1 bytes in the held-out part.
  std::int64_t held_out_windows(std::int64_t seq) const { return (size() - held_out_begin()) / (seq + 1); }

 protected:
  void held_out_sample(std::int64_t index, std::int64_t seq, std::int32_t* out) const override;

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
