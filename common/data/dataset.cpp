#include "common/data/dataset.hpp"

#include <cstring>
#include <filesystem>

#include "common/data/synthetic_corpus.hpp"
#include "common/data/text_corpus.hpp"

namespace usp {

void Dataset::check_seq(std::int64_t seq) const {
  if (seq < 1) throw UsageError("sequence length must be >= 1, got " + std::to_string(seq));
}

Batch Dataset::batch(std::int64_t step, std::int64_t first_sample, std::int64_t count, std::int64_t seq) const {
  check_seq(seq);
  constexpr std::int64_t kIndexLimit = std::int64_t{1} << 32;
  USP_CHECK(step >= 0 && step < kHeldOutStep,
            "Dataset::batch: step " + std::to_string(step) + " outside [0, 2^32 - 1) (the last step is held out)");
  USP_CHECK(first_sample >= 0 && count >= 0 && first_sample + count <= kIndexLimit,
            "Dataset::batch: samples [" + std::to_string(first_sample) + ", " + std::to_string(first_sample + count) +
                ") outside [0, 2^32)");
  // samples [count, seq + 1]: row r is sample first_sample + r.
  Tensor samples = Tensor::empty({count, seq + 1}, DType::i32, MemCategory::Temporary);
  std::int32_t* rows = samples.data<std::int32_t>();
  for (std::int64_t r = 0; r < count; ++r) sample(step, first_sample + r, seq, rows + r * (seq + 1));
  return split_samples(samples);
}

Batch Dataset::held_out_batch(std::int64_t first, std::int64_t count, std::int64_t seq) const {
  check_seq(seq);
  USP_CHECK(first >= 0 && count >= 0 && first + count <= (std::int64_t{1} << 32),
            "Dataset::held_out_batch: samples [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") outside [0, 2^32)");
  Tensor samples = Tensor::empty({count, seq + 1}, DType::i32, MemCategory::Temporary);
  std::int32_t* rows = samples.data<std::int32_t>();
  for (std::int64_t r = 0; r < count; ++r) held_out_sample(first + r, seq, rows + r * (seq + 1));
  return split_samples(samples);
}

Batch split_samples(const Tensor& samples) {
  USP_CHECK(samples.ndim() == 2 && samples.dtype() == DType::i32 && samples.dim(1) >= 2,
            "split_samples: expected [count, seq + 1] i32 with seq >= 1, got " + samples.str(0));
  const std::int64_t count = samples.dim(0), seq = samples.dim(1) - 1;
  Batch b;
  b.inputs = Tensor::empty({count, seq}, DType::i32, MemCategory::Temporary);
  b.targets = Tensor::empty({count, seq}, DType::i32, MemCategory::Temporary);
  const std::int32_t* src = samples.data<std::int32_t>();
  std::int32_t* in = b.inputs.data<std::int32_t>();
  std::int32_t* tg = b.targets.data<std::int32_t>();
  const auto row_bytes = static_cast<std::size_t>(seq) * sizeof(std::int32_t);
  for (std::int64_t r = 0; r < count; ++r) {
    std::memcpy(in + r * seq, src + r * (seq + 1), row_bytes);      // t_0 .. t_{seq-1}
    std::memcpy(tg + r * seq, src + r * (seq + 1) + 1, row_bytes);  // t_1 .. t_seq
  }
  return b;
}

std::unique_ptr<Dataset> make_dataset(const std::string& spec, std::uint64_t seed) {
  if (spec == "synthetic") return std::make_unique<SyntheticCorpus>(seed);
  if (spec == "lessons") {
    if (!std::filesystem::exists(USP_LESSONS_TEXT))
      throw UsageError(std::string("data 'lessons' reads ") + USP_LESSONS_TEXT +
                       ", which the build makes (cmake --build BUILD --target lessons_corpus)");
    return std::make_unique<TextCorpus>(USP_LESSONS_TEXT, seed);
  }
  if (spec.rfind("text:", 0) == 0) {
    const std::string path = spec.substr(5);
    if (path.empty()) throw UsageError("data 'text:' needs a file name (text:PATH)");
    return std::make_unique<TextCorpus>(path, seed);
  }
  throw UsageError("data must be 'synthetic', 'lessons' or 'text:PATH', got '" + spec + "'");
}

std::vector<Batch> rank_micro_batches(const Dataset& data, std::int64_t step, int rank, std::int64_t k,
                                      std::int64_t mbs, std::int64_t seq) {
  std::vector<Batch> out;
  for (std::int64_t j = 0; j < k; ++j) out.push_back(data.batch(step, (rank * k + j) * mbs, mbs, seq));
  return out;
}

}  // namespace usp
