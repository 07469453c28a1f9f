#include "common/train/training_summary.hpp"

#include "common/train/finite_loss.hpp"

#include "common/io/output_file.hpp"
#include "common/json.hpp"

namespace usp {

std::vector<std::vector<std::int64_t>> gather_int64(Communicator& comm, const std::vector<std::int64_t>& mine) {
  // Tensors have no 64-bit integer type: each value travels as two i32 words (low, high).
  const std::int64_t n = static_cast<std::int64_t>(mine.size());
  Tensor in = Tensor::empty({2 * n}, DType::i32, MemCategory::Temporary);
  // On a communicator of device memory (NCCL, host-staged) the words go through its device.
  Tensor out = Tensor::empty({comm.size() * 2 * n}, DType::i32, MemCategory::Temporary, comm.device());
  auto* w = in.data<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(mine[static_cast<std::size_t>(i)]);
    w[2 * i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(u));
    w[2 * i + 1] = static_cast<std::int32_t>(static_cast<std::uint32_t>(u >> 32));
  }
  comm.all_gather(on_device(in, comm.device()), out);
  const Tensor got = on_device(out, Device::cpu());
  std::vector<std::vector<std::int64_t>> all(static_cast<std::size_t>(comm.size()));
  const auto* r = got.data<std::int32_t>();
  for (int k = 0; k < comm.size(); ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t at = 2 * (k * n + i);
      const std::uint64_t lo = static_cast<std::uint32_t>(r[at]), hi = static_cast<std::uint32_t>(r[at + 1]);
      all[static_cast<std::size_t>(k)].push_back(static_cast<std::int64_t>(lo | (hi << 32)));
    }
  }
  return all;
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
