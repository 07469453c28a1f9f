// The validator: is a schedule something the executor can run to the end, computing every
// gradient exactly once? It checks, without running anything (by replaying the lists, see
// schedule_replay.hpp, under the semantics of schedule.hpp):
//   * shape    p lists; every op's micro-batch in 0..m-1 and chunk in 0..v-1;
//   * coverage every rank runs, for every (micro-batch, chunk) it holds, F exactly once and
//              either BW exactly once or B and W exactly once each (nothing missing, nothing
//              duplicated);
//   * messages where consecutive stages are on different ranks, the activation and the
//              gradient crossing that boundary are each sent exactly once by one side and
//              received exactly once by the other; where they are not, no message exists;
//   * inputs   no op runs before its input is there: an F before its activation was received
//              (or before the previous stage's F, when that stage is on the same rank), a B or
//              BW before its own F or before its output gradient arrived, a W before its B, a
//              send before the op producing its tensor;
//   * deadlock every rank reaches the end of its list: no cycle of receives waiting for sends
//              that come after other receives.
#pragma once
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"

namespace usp::ch08 {

// "" when the schedule is valid; otherwise the first problem found, naming the rank, the op's
// index in that rank's list and the op, and the reason, e.g.
//   "rank 1, op 4 (BW(0)): its output gradient has not been received (recv_grad(0) comes later)"
//   "rank 2: F(3) is missing"
//   "deadlock, no rank can go on: rank 0 waits at op 1 (recv_grad(0)) for rank 1; ..."
std::string validate_schedule(const Schedule& s);

}  // namespace usp::ch08
