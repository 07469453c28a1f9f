// Replaying a schedule: running every rank's list in an order the execution semantics of
// schedule.hpp allow, without running anything real. The validator and the simulator are two
// uses of the same replay: one checks each op's inputs, the other times it.
//
// The order: each rank's ops in list order; a send never waits; a receive runs only once its
// matching send has run (on the other rank). Ranks take turns, each running as far as it can,
// until every list is done or no rank can go on (deadlock: every unfinished rank waits at a
// receive whose send has not run).
#pragma once
#include <compare>
#include <functional>
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"

namespace usp::ch08 {

// What a send posts and a receive waits for: the activation or the gradient of micro-batch mb
// leaving virtual stage from_stage (the MPI tag of a real executor could be built from it).
struct Message {
  bool gradient = false;
  int mb = 0;
  int from_stage = 0;
  auto operator<=>(const Message&) const = default;
};

// The message of a communication op that `rank` runs (recv_act(j, c) waits for stage s-1's
// activation of j, send_act(j, c) posts stage s's, and so on; s = the stage of chunk c).
Message message_of(const StageLayout& layout, int rank, const Op& op);

// Calls step(rank, index) once for every op, in a replay order. step returns false to stop the
// replay (it found something wrong); replay then returns "". Returns "" when every op ran, else a
// description of the deadlock naming each waiting rank, its op and the rank it waits for.
// Needs every op's chunk in range (the validator checks it first).
std::string replay(const Schedule& s, const std::function<bool(int rank, int index)>& step);

}  // namespace usp::ch08
