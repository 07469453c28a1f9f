// The compute order of each pipeline schedule: for every rank, the F, B, W and BW operations
// (schedule.hpp) in the order that rank runs them. Communication is not part of these lists:
// with_communication (schedule.hpp) derives it. Each function returns [p] lists; list r is rank
// r's. Pure functions of (p, m[, v]); make_schedule checks the parameters before calling them.
//
// The picture to keep in mind (the simulator's text chart: p = 4 ranks, m = 8 micro-batches,
// t_BW = 2 t_F, digits are micro-batches; B here is the whole backward BW):
//
//   AFAB   rank 0 | F0 F1 F2 F3 F4 F5 F6 F7 .  .  .  .  .  .  .  .  .  B0 B0 B1 B1 ... B7 B7
//          rank 3 | .  .  .  F0 F1 F2 F3 F4 F5 F6 F7 B0 B0 B1 B1 ... B7 B7 .  .  .  .  .  .
//   1F1B   rank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1 F5 B2 B2 F6 ... .  B7 B7
//          rank 3 | .  .  .  F0 B0 B0 F1 B1 B1 F2 B2 B2 ... F7 B7 B7 .  .  .  .  .  .
// Both idle (p-1)(t_F + t_BW) per rank; AFAB holds m micro-batches' activations at its peak,
// 1F1B only p - r on rank r.
#pragma once
#include <vector>

#include "chapters/08_pipeline_parallel/schedule.hpp"

namespace usp::ch08 {

using RankOps = std::vector<std::vector<Op>>;  // [p] ordered lists, one per rank

// All forward, all backward (GPipe): every rank runs F(0) .. F(m-1), then BW(0) .. BW(m-1).
// Any p, m >= 1.
RankOps afab(int p, int m);

// Exercise 08.1 (with with_communication, schedule.hpp): one forward, one backward
// (PipeDream-Flush, Megatron-LM's default). Returns [p] lists of F(j, 0) and BW(j, 0) ops (one
// chunk per rank: rank r holds stage r), to be run under the semantics of schedule.hpp. What 1F1B
// promises, and the tests check:
//   - valid: validate_schedule accepts the lists once with_communication has added the messages;
//   - complete and in order: every micro-batch 0 .. m-1 gets exactly one F and one BW on every
//     rank, each rank's F's in micro-batch order and its BW's in micro-batch order;
//   - memory: rank r never holds more than min(p - r, m) micro-batches' activations (F run, BW
//     not yet), the first stage the most: p micro-batches, however large m;
//   - time: with t_F and t_BW the same on every stage, the step is no longer than AFAB's,
//     (m + p - 1)(t_F + t_BW), whatever the ratio t_BW / t_F (simulate measures it);
//   - eager: no rank postpones a forward that the memory bound lets it run; a backward runs only
//     when the bound (or the end of the micro-batches) leaves no forward to run.
// Nothing else is given: how many forwards a rank runs before its first backward, and why p - r
// micro-batches are enough for it never to wait in the steady state, follow from the semantics.
// Any p, m >= 1.
RankOps one_f_one_b(int p, int m);

// Interleaved 1F1B (Megatron-LM): v chunks per rank, looped layout (chunk c of rank r is stage
// c·p + r), m a multiple of p. A rank's k-th forward (k = 0 .. m·v-1) is micro-batch
// (k / (p·v))·p + k % p of chunk (k % (p·v)) / p: micro-batches go through the chunks in groups
// of p. Its k-th backward is the same micro-batch of chunk v-1 - (k % (p·v)) / p. Rank r warms
// up with min(m·v, 2(p-1-r) + (v-1)·p) forwards (all of them when m = p), then alternates
// forward / backward, then runs the backwards left. The bubble shrinks v-fold: (p-1)/(v·m).
RankOps interleaved_1f1b(int p, int m, int v);

// Exercise 08.2 (part 1): ZB-H1, the zero-bubble paper's memory-efficient schedule (Qi et al.,
// "Zero Bubble Pipeline Parallelism", 2023). Returns [p] lists of F(j, 0), B(j, 0) and W(j, 0):
// the backward split into B (the input gradient: what the previous stage waits for) and W (the
// weight gradient: nobody waits for it). What ZB-H1 promises, and the tests check:
//   - valid (schedule.hpp's semantics, with_communication's messages); every micro-batch gets
//     exactly one F, B and W on every rank, each kind in micro-batch order, W(j) after B(j);
//   - F's and B's in 1F1B's order (exercise 08.1's, with B in BW's place);
//   - each W runs right after some B, or after the rank's last B;
//   - time: with m >= p and t_W <= t_B (the same on every stage) every rank idles exactly
//     (p-1)(t_F + t_B - t_W) — a third of 1F1B's bubble when t_F = t_B = t_W;
//   - memory: every rank holds at most p micro-batches' activations (F run, W not yet);
//   - eager: each W as early as the time bound allows (a W run early frees its activations).
// Which B each W follows on rank r, and why that is the fewest W's to put off, is the exercise.
// Any p, m >= 1.
RankOps zb_h1(int p, int m);

// Exercise 08.2 (part 2): ZB-H2, the zero-bubble paper's zero-bubble schedule (Qi et al. 2023,
// section 2.2): more memory for no idle time inside the step. The order a greedy rank builds when
// every operation takes one time unit and messages arrive at once: whenever it is free, a rank runs
//   the oldest micro-batch's B, if its output gradient is there (the previous rank waits for it);
//   else the next F, if its input is there and fewer than 2p - 1 micro-batches are in flight
//     (F done, W not yet: the paper's memory limit, twice 1F1B's first stage less one);
//   else its oldest postponed W;
// else it waits. Each kind in micro-batch order, every micro-batch one F, B and W on every rank.
// With m >= p the result is a parallelogram: rank r starts r·t_F after rank 0, then never
// waits again, and the step lasts (p-1)·t_F + m(t_F + t_B + t_W), the least any schedule can
// take (the last rank cannot start earlier and has that much work). Within one synchronous step
// every rank idles (p-1)·t_F at the parallelogram's two corners — the paper overlaps those with
// the next step's forwards by not synchronising the optimizer step, which this course's step
// does; the bubble inside is zero. The last ranks postpone their W's to the end so that their
// B's, which the ranks before them wait for, go first. Any p, m >= 1 (with m < p the last
// gradient still has to travel back up the ranks after the forwards ran out: a longer step).
RankOps zb_h2(int p, int m);

// DualPipeV (DeepSeek's DualPipe "cut in half"; the order of the DualPipe repository's
// dualpipev.py, its eight phases per rank r): v = 2 chunks on the V layout (StageLayout::v_shape).
// Writing F0/F1 for a forward of chunk 0/1, B for an input-gradient pass whose W is queued, BW
// for a whole backward, W for the oldest queued weight gradient:
//   1. 2(p-1-r) × F0            2. (r+1) × F0 F1          3. (p-1-r) × B1 W F1
//   4. (m-2p+r+1) × F0 BW1 F1 BW0   (DualPipe overlaps each F with the BW beside it: F&B)
//   5. (p-1-r) × BW1 F1 BW0     6. (r+1) × B1 B0 (the first half BW, the second half split)
//   7. (p-1-r) × W B0           8. (r+1) × W
// Each chunk's forwards and backwards run its micro-batches in order. Needs m >= 2p.
// Here F&B runs as F then BW, one after the other (the README's bubble, (PP/2-1)(F&B + B - 3W)
// for PP = 2p stages, counts F&B as one overlapped time and is not what this executor can show).
// With t_F = t_B = t_W per chunk every rank idles (p-1)·t_F in a step of 2m chunks' work.
RankOps dualpipev(int p, int m);

}  // namespace usp::ch08
