// Replaying a schedule in an order its semantics allow (see schedule_replay.hpp).
#include "chapters/08_pipeline_parallel/schedule_replay.hpp"

#include <cstddef>
#include <set>
#include <vector>

#include "common/error.hpp"

namespace usp::ch08 {

Message message_of(const StageLayout& layout, int rank, const Op& op) {
  const int s = layout.stage_of(rank, op.chunk);
  switch (op.kind) {
    case OpKind::send_act: return {false, op.mb, s};
    case OpKind::recv_act: return {false, op.mb, s - 1};
    case OpKind::send_grad: return {true, op.mb, s};
    case OpKind::recv_grad: return {true, op.mb, s + 1};
    default: throw Error(std::string("message_of: ") + op_kind_name(op.kind) + " is not a communication op");
  }
}

std::string replay(const Schedule& s, const std::function<bool(int rank, int index)>& step) {
  const std::size_t p = s.ops.size();
  std::vector<std::size_t> next(p, 0);  // each rank's next op
  std::set<Message> posted;              // messages whose send has run
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t r = 0; r < p; ++r) {
      const std::vector<Op>& list = s.ops[r];
      while (next[r] < list.size()) {
        const Op& op = list[next[r]];
        const bool receive = op.kind == OpKind::recv_act || op.kind == OpKind::recv_grad;
        if (receive && !posted.count(message_of(s.layout, static_cast<int>(r), op))) break;  // blocks
        if (!step(static_cast<int>(r), static_cast<int>(next[r]))) return "";
        if (op.kind == OpKind::send_act || op.kind == OpKind::send_grad)
          posted.insert(message_of(s.layout, static_cast<int>(r), op));
        ++next[r];
        progress = true;
      }
    }
  }
  std::string waits;
  for (std::size_t r = 0; r < p; ++r) {
    if (next[r] == s.ops[r].size()) continue;
    const Op& op = s.ops[r][next[r]];
    waits += std::string(waits.empty() ? "" : "; ") + "rank " + std::to_string(r) + " waits at op " +
             std::to_string(next[r]) + " (" + op_name(op, s.v) + ") for rank " +
             std::to_string(peer_rank(s.layout, static_cast<int>(r), op));
  }
  return waits.empty() ? "" : "deadlock, no rank can go on: " + waits;
}

}  // namespace usp::ch08
