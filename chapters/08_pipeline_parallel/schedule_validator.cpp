// The validator (see schedule_validator.hpp): static checks of shape, coverage and messages
// first, so that a missing op is reported as missing rather than as the deadlock it causes;
// then a replay that checks each op's inputs as it runs.
#include "chapters/08_pipeline_parallel/schedule_validator.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule_replay.hpp"

namespace usp::ch08 {

namespace {

constexpr int kNumKinds = 8;

// For one rank: where each op of each (kind, micro-batch, chunk) sits in the list (-1: absent),
// and whether the replay has run it yet.
struct RankIndex {
  int m = 0, v = 0;
  std::array<std::vector<int>, kNumKinds> position;
  std::array<std::vector<char>, kNumKinds> done;
  RankIndex(int m_, int v_) : m(m_), v(v_) {
    for (auto& x : position) x.assign(static_cast<std::size_t>(m * v), -1);
    for (auto& x : done) x.assign(static_cast<std::size_t>(m * v), 0);
  }
  static std::size_t kind(OpKind k) { return static_cast<std::size_t>(k); }
  std::size_t key(int mb, int chunk) const { return static_cast<std::size_t>(mb * v + chunk); }
  int& at(OpKind k, int mb, int chunk) { return position[kind(k)][key(mb, chunk)]; }
  char& ran(OpKind k, int mb, int chunk) { return done[kind(k)][key(mb, chunk)]; }
};

std::string where(int r, int i, const Op& op, int v) {
  return "rank " + std::to_string(r) + ", op " + std::to_string(i) + " (" + op_name(op, v) + "): ";
}

std::string rank_str(int r) { return "rank " + std::to_string(r) + ": "; }

// The layout must place each virtual stage 0 .. p·v-1 exactly once.
std::string check_layout(const Schedule& s) {
  const StageLayout& l = s.layout;
  if (l.p != s.p || l.v != s.v || static_cast<int>(l.stage.size()) != s.p * s.v)
    return "the stage layout is not p = " + std::to_string(s.p) + " ranks of v = " + std::to_string(s.v) + " chunks";
  std::vector<int> sorted = l.stage;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < s.p * s.v; ++i)
    if (sorted[static_cast<std::size_t>(i)] != i)
      return "the stage layout does not hold each virtual stage 0.." + std::to_string(s.p * s.v - 1) + " exactly once";
  return "";
}

// Where a stage's neighbours live: on another rank (a message crosses) or on this one.
struct Boundaries {
  const StageLayout& layout;
  int last;  // the last virtual stage
  explicit Boundaries(const StageLayout& l) : layout(l), last(l.num_stages() - 1) {}
  bool remote_prev(int r, int c) const {
    const int st = layout.stage_of(r, c);
    return st > 0 && layout.rank_of(st - 1) != r;
  }
  bool remote_next(int r, int c) const {
    const int st = layout.stage_of(r, c);
    return st < last && layout.rank_of(st + 1) != r;
  }
};

// 1. Shape, duplicates, and messages only where a boundary between ranks is; fills index.
std::string index_ops(const Schedule& s, const Boundaries& at, std::vector<RankIndex>& index) {
  const int m = s.m, v = s.v;
  for (int r = 0; r < s.p; ++r) {
    const std::vector<Op>& list = s.ops[static_cast<std::size_t>(r)];
    RankIndex& ix = index[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Op& op = list[static_cast<std::size_t>(i)];
      if (op.mb < 0 || op.mb >= m)
        return where(r, i, op, v) + "micro-batch " + std::to_string(op.mb) + " is not in 0.." + std::to_string(m - 1);
      if (op.chunk < 0 || op.chunk >= v)
        return where(r, i, op, v) + "chunk " + std::to_string(op.chunk) + " is not in 0.." + std::to_string(v - 1);
      const bool to_next = op.kind == OpKind::send_act || op.kind == OpKind::recv_grad;
      const bool to_prev = op.kind == OpKind::recv_act || op.kind == OpKind::send_grad;
      if (to_next && !at.remote_next(r, op.chunk))
        return where(r, i, op, v) + "no message crosses there: stage " + std::to_string(at.layout.stage_of(r, op.chunk)) +
               " has no next stage on another rank";
      if (to_prev && !at.remote_prev(r, op.chunk))
        return where(r, i, op, v) + "no message crosses there: stage " + std::to_string(at.layout.stage_of(r, op.chunk)) +
               " has no previous stage on another rank";
      int& pos = ix.at(op.kind, op.mb, op.chunk);
      if (pos >= 0) return where(r, i, op, v) + "duplicate: " + op_name(op, v) + " already runs at op " + std::to_string(pos);
      pos = i;
    }
  }
  return "";
}

// 2. Coverage: every (micro-batch, chunk) of every rank, forward, backward and messages.
std::string check_coverage(const Schedule& s, const Boundaries& at, std::vector<RankIndex>& index) {
  const int v = s.v;
  for (int r = 0; r < s.p; ++r) {
    RankIndex& ix = index[static_cast<std::size_t>(r)];
    for (int j = 0; j < s.m; ++j) {
      for (int c = 0; c < v; ++c) {
        auto missing = [&](OpKind k, const std::string& why) {
          return rank_str(r) + op_name({k, j, c}, v) + " is missing" + (why.empty() ? "" : ": " + why);
        };
        if (ix.at(OpKind::F, j, c) < 0) return missing(OpKind::F, "");
        const int bw = ix.at(OpKind::BW, j, c), b = ix.at(OpKind::B, j, c), w = ix.at(OpKind::W, j, c);
        if (bw >= 0 && (b >= 0 || w >= 0)) {
          const OpKind half = b >= 0 ? OpKind::B : OpKind::W;
          return where(r, std::max(b, w), {half, j, c}, v) + "the backward runs twice: BW at op " + std::to_string(bw) +
                 " already computes both gradients";
        }
        if (bw < 0 && b < 0 && w < 0) return missing(OpKind::BW, "neither BW nor B and W");
        if (bw < 0 && b < 0) return missing(OpKind::B, "W at op " + std::to_string(w) + " computes only the weight gradient");
        if (bw < 0 && w < 0) return missing(OpKind::W, "B at op " + std::to_string(b) + " computes only the input gradient");
        const int st = at.layout.stage_of(r, c);
        if (at.remote_prev(r, c)) {
          const std::string q = std::to_string(at.layout.rank_of(st - 1));
          if (ix.at(OpKind::recv_act, j, c) < 0) return missing(OpKind::recv_act, "F needs the activation rank " + q + " sends");
          if (ix.at(OpKind::send_grad, j, c) < 0) return missing(OpKind::send_grad, "rank " + q + " waits for this gradient");
        }
        if (at.remote_next(r, c)) {
          const std::string q = std::to_string(at.layout.rank_of(st + 1));
          if (ix.at(OpKind::send_act, j, c) < 0) return missing(OpKind::send_act, "rank " + q + " waits for this activation");
          if (ix.at(OpKind::recv_grad, j, c) < 0) return missing(OpKind::recv_grad, "the backward needs the gradient rank " + q + " sends");
        }
      }
    }
  }
  return "";
}

// 3. Replay: each op's inputs must be on the rank when it runs; a deadlock is the replay's own report.
std::string replay_inputs(const Schedule& s, const Boundaries& at, std::vector<RankIndex>& index) {
  const int v = s.v;
  const StageLayout& layout = at.layout;
  std::string error;
  const std::string deadlock = replay(s, [&](int r, int i) {
    const Op& op = s.ops[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
    RankIndex& ix = index[static_cast<std::size_t>(r)];
    const int j = op.mb, c = op.chunk, st = layout.stage_of(r, c);
    auto later = [&](OpKind k, int chunk) {
      return " (" + op_name({k, j, chunk}, v) + " is at op " + std::to_string(ix.at(k, j, chunk)) + ")";
    };
    auto backward_ran = [&](int chunk) { return ix.ran(OpKind::B, j, chunk) || ix.ran(OpKind::BW, j, chunk); };
    switch (op.kind) {
      case OpKind::F:
        if (at.remote_prev(r, c) && !ix.ran(OpKind::recv_act, j, c))
          error = "its input activation has not been received yet" + later(OpKind::recv_act, c);
        else if (st > 0 && !at.remote_prev(r, c) && !ix.ran(OpKind::F, j, layout.chunk_of(st - 1)))
          error = "the previous stage's forward, on this rank, has not run yet" + later(OpKind::F, layout.chunk_of(st - 1));
        break;
      case OpKind::B:
      case OpKind::BW:
        if (!ix.ran(OpKind::F, j, c))
          error = "its forward has not run on this rank yet" + later(OpKind::F, c);
        else if (at.remote_next(r, c) && !ix.ran(OpKind::recv_grad, j, c))
          error = "its output gradient has not been received yet" + later(OpKind::recv_grad, c);
        else if (st < at.last && !at.remote_next(r, c) && !backward_ran(layout.chunk_of(st + 1)))
          error = "the next stage's backward, on this rank, has not run yet";
        break;
      case OpKind::W:
        if (!ix.ran(OpKind::B, j, c)) error = "its B has not run yet" + later(OpKind::B, c);
        break;
      case OpKind::send_act:
        if (!ix.ran(OpKind::F, j, c)) error = "it sends F's output before F has run" + later(OpKind::F, c);
        break;
      case OpKind::send_grad:
        if (!backward_ran(c)) error = "it sends the input gradient before the backward has run";
        break;
      case OpKind::recv_act:
      case OpKind::recv_grad:
        break;  // the replay runs a receive only after its send
    }
    if (!error.empty()) {
      error = where(r, i, op, v) + error;
      return false;
    }
    ix.ran(op.kind, j, c) = 1;
    return true;
  });
  return error.empty() ? deadlock : error;
}

}  // namespace

std::string validate_schedule(const Schedule& s) {
  if (s.p < 1 || s.m < 1 || s.v < 1) return "p, m and v must be >= 1";
  if (std::string e = check_layout(s); !e.empty()) return e;
  if (static_cast<int>(s.ops.size()) != s.p)
    return "the schedule has " + std::to_string(s.ops.size()) + " rank lists for p = " + std::to_string(s.p);
  const Boundaries at(s.layout);
  std::vector<RankIndex> index(static_cast<std::size_t>(s.p), RankIndex(s.m, s.v));
  if (std::string e = index_ops(s, at, index); !e.empty()) return e;
  if (std::string e = check_coverage(s, at, index); !e.empty()) return e;
  return replay_inputs(s, at, index);
}

}  // namespace usp::ch08
