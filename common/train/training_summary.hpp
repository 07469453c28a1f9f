// summary.json for training chapters (docs/ARCHITECTURE.md, section 5): at least
//   losses (one per step), final_loss, tokens_per_second, world_size, dp/tp/cp/pp/ep,
//   memory: per rank, peak bytes per category (and of the total),
//   comm_bytes: per rank, bytes sent per collective kind,
// plus the command line's values ("flags") and the chapter's own results ("results": {...}).
// Collective: every rank calls write_training_summary; rank 0 writes the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/comm/communicator.hpp"
#include "common/json.hpp"
#include "common/memory_tracker.hpp"

namespace usp {

struct TrainingSummary {
  std::string chapter;                 // "01_memory"
  std::vector<double> losses;          // one per optimizer step
  double tokens_per_second = 0;        // global tokens per second of wall time
  int dp = 1, tp = 1, cp = 1, pp = 1, ep = 1;
  std::string flags_json = "{}";       // Cli::values_json()
  std::string chapter_json = "{}";     // the chapter's own results, an object
  // This rank's training traffic, when it went over other communicators than world (a mesh's
  // groups); null: world's own counters.
  const CommStats* comm = nullptr;
  // A non-finite loss is an error (finite_loss.hpp): the summary is refused and the run fails,
  // unless the chapter reports divergence as a result of its own (chapter 14's recipes; NaN is
  // written as null).
  bool non_finite_is_result = false;
};

// Gathers this rank's tracker peaks and comm stats, and writes path on rank 0; on rank 0, a
// non-finite loss in s.losses is a fatal error first (require_finite_losses).
void write_training_summary(Communicator& world, const std::string& path, const TrainingSummary& s);

// The summary of chapters 12-14, which write it on every way out (at the end, or where an
// exercise's stub stops the chapter): made with --out's folder created, the chapter's results
// object open and summary's chapter and flags set; the chapter adds to results and sets
// summary.losses. write() closes results, which become summary.chapter_json, and writes
// <out>/summary.json (collective, as write_training_summary).
struct OpenSummary {
  OpenSummary(const Cli& cli, const std::string& chapter);
  void write(Communicator& world);

  const std::string out;  // --out
  JsonWriter results;
  TrainingSummary summary;
};

}  // namespace usp
