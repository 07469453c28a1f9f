// The schedule's data: names, the stage layout and the parameters each schedule accepts (see
// schedule.hpp). The communication a compute order implies is exercise 08.1
// (solutions/08_pipeline_parallel/communication.cpp).
#include "chapters/08_pipeline_parallel/schedule.hpp"

#include <cstddef>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"
#include "common/enum_names.hpp"
#include "common/error.hpp"

namespace usp::ch08 {

namespace {

inline constexpr EnumNames<OpKind, 8> kOpKindNames{{{{OpKind::F, "F"},
                                                     {OpKind::B, "B"},
                                                     {OpKind::W, "W"},
                                                     {OpKind::BW, "BW"},
                                                     {OpKind::send_act, "send_act"},
                                                     {OpKind::recv_act, "recv_act"},
                                                     {OpKind::send_grad, "send_grad"},
                                                     {OpKind::recv_grad, "recv_grad"}}}};

inline constexpr EnumNames<ScheduleKind, 6> kScheduleNames{{{{ScheduleKind::afab, "afab"},
                                                            {ScheduleKind::one_f_one_b, "1f1b"},
                                                            {ScheduleKind::interleaved_1f1b, "interleaved"},
                                                            {ScheduleKind::zb_h1, "zb-h1"},
                                                            {ScheduleKind::zb_h2, "zb-h2"},
                                                            {ScheduleKind::dualpipev, "dualpipev"}}}};

}  // namespace

const char* op_kind_name(OpKind kind) { return kOpKindNames.name(kind); }

bool is_compute(OpKind kind) {
  return kind == OpKind::F || kind == OpKind::B || kind == OpKind::W || kind == OpKind::BW;
}

std::string op_name(const Op& op, int v) {
  std::string s = std::string(op_kind_name(op.kind)) + "(" + std::to_string(op.mb);
  if (v > 1) s += ", chunk " + std::to_string(op.chunk);
  return s + ")";
}

int StageLayout::rank_of(int s) const {
  for (int i = 0; i < p * v; ++i)
    if (stage[static_cast<std::size_t>(i)] == s) return i / v;
  throw Error("stage " + std::to_string(s) + " is not in the layout");
}

int StageLayout::chunk_of(int s) const {
  for (int i = 0; i < p * v; ++i)
    if (stage[static_cast<std::size_t>(i)] == s) return i % v;
  throw Error("stage " + std::to_string(s) + " is not in the layout");
}

StageLayout StageLayout::looped(int p, int v) {
  StageLayout layout{p, v, std::vector<int>(static_cast<std::size_t>(p * v))};
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c) layout.stage[static_cast<std::size_t>(r * v + c)] = c * p + r;
  return layout;
}

StageLayout StageLayout::v_shape(int p) {
  StageLayout layout{p, 2, std::vector<int>(static_cast<std::size_t>(2 * p))};
  for (int r = 0; r < p; ++r) {
    layout.stage[static_cast<std::size_t>(2 * r)] = r;
    layout.stage[static_cast<std::size_t>(2 * r + 1)] = 2 * p - 1 - r;
  }
  return layout;
}

int chunks_of(ScheduleKind kind, int v) {
  return kind == ScheduleKind::interleaved_1f1b ? v : kind == ScheduleKind::dualpipev ? 2 : 1;
}

const char* schedule_kind_name(ScheduleKind kind) { return kScheduleNames.name(kind); }

ScheduleKind parse_schedule_kind(const std::string& text) { return kScheduleNames.parse(text, "--schedule"); }

std::vector<ScheduleKind> all_schedule_kinds() {
  std::vector<ScheduleKind> kinds;
  for (const auto& entry : kScheduleNames.entries) kinds.push_back(entry.first);
  return kinds;
}

int peer_rank(const StageLayout& layout, int rank, const Op& op) {
  const int s = layout.stage_of(rank, op.chunk);
  switch (op.kind) {
    case OpKind::send_act:
    case OpKind::recv_grad:
      return layout.rank_of(s + 1);  // the next stage's rank
    case OpKind::recv_act:
    case OpKind::send_grad:
      return layout.rank_of(s - 1);  // the previous stage's rank
    default:
      throw Error(std::string("peer_rank: ") + op_kind_name(op.kind) + " is not a communication op");
  }
}

Schedule make_schedule(ScheduleKind kind, int p, int m, int v) {
  const std::string name = schedule_kind_name(kind);
  if (p < 1) throw UsageError("a pipeline needs p >= 1 ranks, got p = " + std::to_string(p));
  if (m < 1) throw UsageError("a pipeline needs m >= 1 micro-batches, got m = " + std::to_string(m));
  if (v < 1) throw UsageError("each rank needs v >= 1 model chunks, got v = " + std::to_string(v));
  if (kind == ScheduleKind::dualpipev) {
    if (v != 2)
      throw UsageError("DualPipeV runs v = 2 model chunks per rank (the two arms of its V), got v = " +
                       std::to_string(v));
    if (m < 2 * p)
      throw UsageError("DualPipeV needs m >= 2p micro-batches (its steady phase pairs the forward of one with the "
                       "backward of another from the other arm of the V); got m = " + std::to_string(m) + ", p = " +
                       std::to_string(p));
  } else if (v > 1 && kind != ScheduleKind::interleaved_1f1b) {
    throw UsageError("v = " + std::to_string(v) + " model chunks per rank: only the interleaved schedule splits a " +
                     "rank's layers into chunks; " + name + " needs v = 1");
  }
  if (kind == ScheduleKind::interleaved_1f1b && m % p != 0)
    throw UsageError("interleaved 1F1B sends the micro-batches through the chunks in groups of p, so m must be a "
                     "multiple of p; got m = " + std::to_string(m) + ", p = " + std::to_string(p));

  Schedule s{kind, p, m, v, kind == ScheduleKind::dualpipev ? StageLayout::v_shape(p) : StageLayout::looped(p, v), {}};
  RankOps compute;
  switch (kind) {
    case ScheduleKind::afab: compute = afab(p, m); break;
    case ScheduleKind::one_f_one_b: compute = one_f_one_b(p, m); break;
    case ScheduleKind::interleaved_1f1b: compute = interleaved_1f1b(p, m, v); break;
    case ScheduleKind::zb_h1: compute = zb_h1(p, m); break;
    case ScheduleKind::zb_h2: compute = zb_h2(p, m); break;
    case ScheduleKind::dualpipev: compute = dualpipev(p, m); break;
  }
  if (static_cast<int>(compute.size()) != p)
    throw Error(name + " returned " + std::to_string(compute.size()) + " rank lists for p = " + std::to_string(p));
  s.ops = with_communication(s.layout, compute);
  return s;
}

}  // namespace usp::ch08
