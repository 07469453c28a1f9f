// The mean next-token loss of a model on a text file: every non-overlapping window of seq + 1
// bytes in file order (SequentialWindows), each window's seq predictions weighted equally.
// This is what usp_eval prints; it depends only on the parameters and the file.
#pragma once
#include <cstdint>

#include "common/data/text_corpus.hpp"
#include "common/model/model.hpp"

namespace usp {

struct TextLoss {
  double mean_loss = 0;      // nats per predicted token
  std::int64_t windows = 0;  // windows of seq + 1 bytes evaluated
  std::int64_t tokens = 0;   // predicted tokens: windows · seq
};

// Runs model.evaluate on batch_size windows at a time (the last batch may be smaller) on the
// device of the model's parameters. UsageError if the text is shorter than seq + 1 bytes or
// seq exceeds the model's max_position_embeddings.
TextLoss evaluate_text(Model& model, const TextCorpus& text, std::int64_t seq, std::int64_t batch_size);

}  // namespace usp
