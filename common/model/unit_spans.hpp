// The compute side of the chapters' timelines: each model unit's forward and backward recorded
// as a span on the "compute" stream of the trace (common/trace.hpp), through the model's hooks.
// The communication side comes from the communicator itself: with the tracer on, the MPI
// backend records every op as a "comm" span from when its progress thread starts it to when it
// completes.
//
//   forward embedding, forward layer 0 .. forward layer L-1, forward head,
//   backward head, backward layer L-1 .. backward layer 0, backward embedding
#pragma once
#include <string>

#include "common/model/model.hpp"

namespace usp {

// "embedding" (unit 0), "layer i" (unit i + 1), "head" (unit layers + 1).
std::string unit_name(int unit, int layers);

// Sets hooks' before/after forward/backward (grad_ready is kept) to record the spans above
// while Tracer::instance() is enabled; nothing otherwise.
void trace_units(ModelHooks& hooks, int layers);

// The span-name prefix of backward compute (what comm_overlap.hpp measures overlap against).
inline constexpr const char* kBackwardPrefix = "backward ";

}  // namespace usp
