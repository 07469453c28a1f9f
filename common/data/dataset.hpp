// Datasets: where training batches come from.
//
// The rule every parallel layout relies on (the data rule, docs/ARCHITECTURE.md, principle 1):
// sample i of step s is a pure function of (seed, s, i). A step's global batch is samples 0..B-1; a data-parallel rank
// r with b samples per rank takes samples [r·b, (r+1)·b) and so sees exactly its rows of the
// global batch, whatever the number of ranks, with no communication and no shared state.
//
// A sample is seq + 1 consecutive tokens t_0..t_seq; the batch's inputs are t_0..t_{seq-1} and
// its targets t_1..t_seq (the inputs shifted by one: position j predicts token j+1).
//
// Batches are small CPU tensors of MemCategory::Temporary (data, not model memory); move them
// with .to(device) where the model runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor.hpp"

namespace usp {

struct Batch {
  Tensor inputs;   // [count, seq] i32
  Tensor targets;  // [count, seq] i32: inputs shifted by one
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  // Token ids are in [0, vocab).
  virtual std::int64_t vocab() const = 0;
  // The spec make_dataset() accepts to rebuild this dataset ("synthetic", "text:PATH"): what a
  // trainer state records so a resumed run reads the same data.
  virtual std::string spec() const = 0;
  virtual std::uint64_t seed() const = 0;

  // Throws UsageError if samples of seq + 1 tokens cannot be drawn (seq < 1, a text file that
  // is too short). batch() calls it; callers may call it early, at an agreement point.
  virtual void check_seq(std::int64_t seq) const;

  // Writes the seq + 1 tokens of sample `index` of step `step` to out[0..seq].
  virtual void sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const = 0;

  // Samples first_sample .. first_sample + count - 1 of step `step`, one per row.
  // 0 <= step < kHeldOutStep, first_sample >= 0, first_sample + count <= 2^32 (the index is the
  // low half of the 64-bit rng counter, the step its high half).
  Batch batch(std::int64_t step, std::int64_t first_sample, std::int64_t count, std::int64_t seq) const;

  // Held-out data, which batch() never returns: held-out samples first .. first + count - 1, for
  // a validation loss. By default the samples of the reserved step kHeldOutStep, which no
  // training step reaches (the synthetic corpus: fresh draws of the same chain); a text file
  // holds out its last part instead (text_corpus.hpp). UsageError when there are not that many.
  Batch held_out_batch(std::int64_t first, std::int64_t count, std::int64_t seq) const;
  static constexpr std::int64_t kHeldOutStep = (std::int64_t{1} << 32) - 1;

 protected:
  // Held-out sample `index` (seq + 1 tokens) into out[0..seq].
  virtual void held_out_sample(std::int64_t index, std::int64_t seq, std::int32_t* out) const {
    sample(kHeldOutStep, index, seq, out);
  }
};

// "synthetic" (SyntheticCorpus, vocab 256), "text:PATH" (TextCorpus of the file's bytes), or
// "lessons": the course's own lessons as one English text (README.md, docs/ARCHITECTURE.md and every
// chapter's README.md, joined at build time into BUILD/data/lessons.txt), the real text every
// build has. Anything else throws UsageError naming the accepted forms.
std::unique_ptr<Dataset> make_dataset(const std::string& spec, std::uint64_t seed);

// Splits inputs/targets out of rows of seq + 1 tokens: samples [count, seq + 1] i32 ->
// Batch{[count, seq], [count, seq]}.
Batch split_samples(const Tensor& samples);

// Data-parallel rank r's micro-batches of a step: k batches of mbs samples, samples
// [(r·k + j)·mbs, +mbs) of the step's global batch of N_d·k·mbs (docs/ARCHITECTURE.md, principle 1).
std::vector<Batch> rank_micro_batches(const Dataset& data, std::int64_t step, int rank, std::int64_t k,
                                      std::int64_t mbs, std::int64_t seq);

}  // namespace usp
