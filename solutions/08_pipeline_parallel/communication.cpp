// Exercise 08.1, the reference solution (part 2 of 2): the messages a compute order implies
// (contract in chapters/08_pipeline_parallel/schedule.hpp, with_communication).
#include <cstddef>
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "common/error.hpp"

namespace usp::ch08 {

std::vector<std::vector<Op>> with_communication(const StageLayout& layout,
                                                const std::vector<std::vector<Op>>& compute) {
  const int last = layout.num_stages() - 1;
  // Every list is checked before any is built: a bad list is the schedule's bug, said at once.
  for (std::size_t r = 0; r < compute.size(); ++r)
    for (const Op& op : compute[r]) {
      if (!is_compute(op.kind))
        throw Error("rank " + std::to_string(r) + "'s compute list holds " + op_kind_name(op.kind) +
                    ": communication is added here, not by the schedule's order");
      if (op.chunk < 0 || op.chunk >= layout.v)
        throw Error("rank " + std::to_string(r) + "'s compute list names chunk " + std::to_string(op.chunk) +
                    " of v = " + std::to_string(layout.v));
    }
  std::vector<std::vector<Op>> out(compute.size());
  for (std::size_t r = 0; r < compute.size(); ++r) {
    const int rank = static_cast<int>(r);
    for (const Op& op : compute[r]) {
      const int s = layout.stage_of(rank, op.chunk);
      // A message crosses only where the neighbouring stage lives on another rank: stage 0 reads
      // the data, the last stage's gradient comes from its own loss, and a hand-over between two
      // stages of one rank is local.
      const bool remote_prev = s > 0 && layout.rank_of(s - 1) != rank;
      const bool remote_next = s < last && layout.rank_of(s + 1) != rank;
      // B or BW consume the output gradient and produce the input gradient; W needs only what
      // its own B left on this rank.
      const bool backward = op.kind == OpKind::B || op.kind == OpKind::BW;
      if (op.kind == OpKind::F && remote_prev) out[r].push_back({OpKind::recv_act, op.mb, op.chunk});
      if (backward && remote_next) out[r].push_back({OpKind::recv_grad, op.mb, op.chunk});
      out[r].push_back(op);
      if (op.kind == OpKind::F && remote_next) out[r].push_back({OpKind::send_act, op.mb, op.chunk});
      if (backward && remote_prev) out[r].push_back({OpKind::send_grad, op.mb, op.chunk});
    }
  }
  return out;
}

}  // namespace usp::ch08
