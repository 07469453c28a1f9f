// How much of the communication is hidden behind backward compute, read off one rank's trace.
//
//   hidden = Σ over comm spans c of |c ∩ (union of the backward compute spans)|
//   fraction hidden = hidden / Σ |c|
// A comm span runs from when the communicator starts the op to when it completes, so it also
// counts the time an all-reduce waits for the slowest rank to join: what the step would lose
// if nothing ran meanwhile. Naive DP starts every all-reduce after backward: fraction 0.
#pragma once
#include <vector>

#include "common/trace.hpp"

namespace usp::ch04 {

struct CommOverlap {
  double comm_us = 0;    // total length of the "comm" spans
  double hidden_us = 0;  // the part of it during a backward compute span
  double backward_us = 0;  // total length of the backward compute (the union of its spans)
  int comm_spans = 0;
  int overlapping_spans = 0;  // comm spans that overlap some backward span at all
  double fraction() const { return comm_us > 0 ? hidden_us / comm_us : 0.0; }
  double exposed_us() const { return comm_us - hidden_us; }  // comm while backward was not running
};

// spans: one rank's (Tracer::spans()): streams "comm" and "compute", backward compute named
// "backward ..." (unit_spans.hpp).
CommOverlap comm_overlap(const std::vector<Span>& spans);

}  // namespace usp::ch04
