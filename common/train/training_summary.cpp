#include "common/train/training_summary.hpp"

#include "common/train/finite_loss.hpp"

#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/report/row_gather.hpp"

namespace usp {

std::vector<std::vector<std::int64_t>> gather_int64(Communicator& comm, const std::vector<std::int64_t>& mine) {
  const std::size_t bytes = mine.size() * sizeof(std::int64_t);
  const std::vector<std::byte> got = report::gather_bytes(comm, mine.data(), bytes);
  std::vector<std::vector<std::int64_t>> all(static_cast<std::size_t>(comm.size()), std::vector<std::int64_t>(mine.size()));
  for (std::size_t r = 0; bytes > 0 && r < all.size(); ++r) std::memcpy(all[r].data(), got.data() + r * bytes, bytes);
  return all;
}

void write_training_summary(Communicator& world, const std::string& out_dir, TrainingSummary s, JsonWriter& results) {
  s.chapter_json = results.end_object().str();
  write_training_summary(world, out_dir + "/summary.json", s);
}

void write_training_summary(Communicator& world, const std::string& path, const TrainingSummary& s) {
  const MemoryTracker& tracker = MemoryTracker::instance();
  std::vector<std::int64_t> mine;
  const MemCounts peak = tracker.peak();
  for (int c = 0; c < kNumMemCategories; ++c) mine.push_back(peak.bytes[static_cast<std::size_t>(c)]);
  mine.push_back(tracker.peak_total());
  const CommStats stats = s.comm ? *s.comm : world.stats();
  for (int op = 0; op < kNumCommOps; ++op) mine.push_back(static_cast<std::int64_t>(stats.bytes_sent[static_cast<std::size_t>(op)]));
  const auto all = gather_int64(world, mine);
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
