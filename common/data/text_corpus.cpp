#include "common/data/text_corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/io/input_file.hpp"
#include "common/number_text.hpp"
#include "common/rng.hpp"

namespace usp {

TextCorpus::TextCorpus(const std::string& path, std::uint64_t seed) : path_(path), seed_(seed) {
  require_input_file(path, "text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("text file '" + path + "' could not be opened");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError("text file '" + path + "' could not be read");
  bytes_ = std::move(ss).str();
}

void TextCorpus::check_seq(std::int64_t seq) const {
  Dataset::check_seq(seq);
  if (held_out_begin() < seq + 1)
    throw UsageError("text file '" + path_ + "' has " + count_text(size(), "byte") + ", " +
                     std::to_string(held_out_begin()) + " before the held-out last tenth; need at least seq+1 = " +
                     std::to_string(seq + 1));
}

void TextCorpus::held_out_sample(std::int64_t index, std::int64_t seq, std::int32_t* out) const {
  if (index >= held_out_windows(seq))
    throw UsageError("the held-out last tenth of text file '" + path_ + "' (" +
                     count_text(size() - held_out_begin(), "byte") + ") has " +
                     count_text(held_out_windows(seq), "window") + " of seq+1 = " + std::to_string(seq + 1) +
                     " bytes; validation asked for window " + std::to_string(index) +
                     " (fewer --eval-batches, a smaller --mbs or --seq, or a longer text)");
  const std::int64_t o = held_out_begin() + index * (seq + 1);
  for (std::int64_t j = 0; j <= seq; ++j) out[j] = token(o + j);
}

std::int64_t TextCorpus::sample_offset(std::int64_t step, std::int64_t index, std::int64_t seq) const {
  const std::uint64_t counter = (static_cast<std::uint64_t>(step) << 32) | static_cast<std::uint64_t>(index);
  const rng::Block b = rng::philox4x32_10(counter, rng::make_key(seed_, rng::hash_name("data")));
  const std::uint64_t draw = (static_cast<std::uint64_t>(b.v[0]) << 32) | b.v[1];
  return static_cast<std::int64_t>(draw % static_cast<std::uint64_t>(held_out_begin() - seq));
}

void TextCorpus::sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const {
  const std::int64_t o = sample_offset(step, index, seq);
  for (std::int64_t j = 0; j <= seq; ++j) out[j] = token(o + j);
}

SequentialWindows::SequentialWindows(const TextCorpus& corpus, std::int64_t seq, std::int64_t batch_size)
    : corpus_(corpus), seq_(seq), batch_size_(batch_size) {
  if (seq < 1) throw UsageError("sequence length must be >= 1, got " + std::to_string(seq));
  if (corpus.size() < seq + 1)  // the whole file is read here, its held-out part too
    throw UsageError("text file '" + corpus.path() + "' has " + count_text(corpus.size(), "byte") +
                     "; need at least seq+1 = " + std::to_string(seq + 1));
  if (batch_size < 1) throw UsageError("batch size must be >= 1, got " + std::to_string(batch_size));
  num_windows_ = corpus.size() / (seq + 1);
}

bool SequentialWindows::next(Batch& out) {
  if (next_window_ >= num_windows_) return false;
  const std::int64_t count = std::min(batch_size_, num_windows_ - next_window_);
  // samples [count, seq + 1]: row r is window next_window_ + r.
  Tensor samples = Tensor::empty({count, seq_ + 1}, DType::i32, MemCategory::Temporary);
  std::int32_t* rows = samples.data<std::int32_t>();
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t start = (next_window_ + r) * (seq_ + 1);
    for (std::int64_t j = 0; j <= seq_; ++j) rows[r * (seq_ + 1) + j] = corpus_.token(start + j);
  }
  next_window_ += count;
  out = split_samples(samples);
  return true;
}

}  // namespace usp
