#include "common/train/training_summary.hpp"

#include "common/train/finite_loss.hpp"

#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/report/row_gather.hpp"

namespace usp {

OpenSummary::OpenSummary(const Cli& cli, const std::string& chapter)
    : out(cli.get_string("out")), summary{.chapter = chapter, .losses = {}, .flags_json = cli.values_json()} {
  make_dirs(out);
  results.begin_object();
}

void OpenSummary::write(Communicator& world) {
  summary.chapter_json = results.end_object().str();
  write_training_summary(world, out + "/summary.json", summary);
}

void write_training_summary(Communicator& world, const std::string& path, const TrainingSummary& s) {
  const MemoryTracker& tracker = MemoryTracker::instance();
  std::vector<std::int64_t> mine;
  const MemCounts peak = tracker.peak();
  for (int c = 0; c < kNumMemCategories; ++c) mine.push_back(peak.bytes[static_cast<std::size_t>(c)]);
  mine.push_back(tracker.peak_total());
  const CommStats stats = s.comm ? *s.comm : world.stats();
  for (int op = 0; op < kNumCommOps; ++op) mine.push_back(static_cast<std::int64_t>(stats.bytes_sent[static_cast<std::size_t>(op)]));
  const auto all = report::gather_row_lists(world, mine);
  if (world.rank() != 0) return;
  if (!s.non_finite_is_result) require_finite_losses(s.losses);

  JsonWriter j;
  j.begin_object();
  j.field("chapter", s.chapter);
  j.key("losses").array(s.losses);
  j.field("final_loss", s.losses.empty() ? 0.0 : s.losses.back());
  j.field("tokens_per_second", s.tokens_per_second);
  j.field("world_size", world.size());
  j.field("dp", s.dp).field("tp", s.tp).field("cp", s.cp).field("pp", s.pp).field("ep", s.ep);
  j.key("memory").begin_array();
  for (const auto& r : all) {
    j.begin_object();
    for (int c = 0; c < kNumMemCategories; ++c)
      j.field(mem_category_name(static_cast<MemCategory>(c)), r[static_cast<std::size_t>(c)]);
    j.field("total", r[kNumMemCategories]);
    j.end_object();
  }
  j.end_array();
  j.key("comm_bytes").begin_array();
  for (const auto& r : all) {
    j.begin_object();
    for (int op = 0; op < kNumCommOps; ++op)
      j.field(comm_op_name(static_cast<CommOp>(op)), r[static_cast<std::size_t>(kNumMemCategories + 1 + op)]);
    j.end_object();
  }
  j.end_array();
  j.key("flags").raw(s.flags_json);
  j.key("results").raw(s.chapter_json);
  j.end_object();
  write_file_atomic(path, j.str() + "\n");  // complete or absent; a failed write is an error
}

}  // namespace usp
