// A pipeline schedule as plain data: each rank's ordered list of operations (docs/ARCHITECTURE.md,
// principle 4). One plan, two executors: the real executor runs the lists on MPI ranks, the
// simulator (schedule_simulator.hpp) times the very same lists from per-operation durations, and
// the validator (schedule_validator.hpp) checks them without running anything.
//
// The model is cut into S = p·v consecutive VIRTUAL STAGES (groups of layers). Each of the p
// ranks holds v of them, its model CHUNKS c = 0..v-1; the layout says which stage is which chunk
// of which rank:
//   looped (Megatron-LM):  chunk c of rank r is stage c·p + r       (p = 4, v = 2: rank 0 holds
//                          stages 0 and 4, rank 3 holds stages 3 and 7)
// The batch of one optimizer step is split into m MICRO-BATCHES j = 0..m-1, each going forward
// through stages 0 .. S-1 and backward through S-1 .. 0.
//
// Operations (one rank runs its list in order, one operation at a time):
//   F(j, c)   forward of micro-batch j through chunk c. Stores the chunk's activations of j.
//   BW(j, c)  the whole backward of j through chunk c: the gradient of the chunk's input and of
//             its weights. Frees j's activations of the chunk.
//   B(j, c)   zero-bubble schedules split BW in two: B is the input-gradient half (what the stage
//   W(j, c)   before waits for), W the weight-gradient half (nobody waits for it, so it can run
//             later, in a bubble). W frees j's activations of the chunk (it reads the chunk's
//             inputs and B's output gradients).
// and the communication they imply, explicit in the lists so that an executor just runs them:
//   send_act(j, c)   F(j, c)'s output, to the rank holding the next stage
//   recv_act(j, c)   F(j, c)'s input, from the rank holding the previous stage
//   send_grad(j, c)  the gradient of chunk c's input (from B or BW), to the previous stage's rank
//   recv_grad(j, c)  the gradient of chunk c's output, from the next stage's rank
// (j, c) always name THIS rank's chunk; the peer is found from the layout (peer_rank). Where two
// consecutive stages sit on the same rank the hand-over is local and no message exists; stage 0
// reads the data and the last stage computes the loss, so they have no recv_act / recv_grad.
//
// Execution semantics (what the validator checks, the simulator times and the executor does):
//   * a send is non-blocking and buffered: it posts the message and the rank goes on at once
//     (the executor keeps the buffer alive until the step ends);
//   * a receive blocks until the matching message has been posted by its sender;
//   * a compute op needs its inputs on the rank when it starts, else the list is wrong:
//       F(j, c)   the activation: recv_act(j, c) done, or F(j, c') of the previous stage done
//                 here when that stage is local, or nothing for stage 0;
//       B/BW(j,c) F(j, c) done here, and the output gradient: recv_grad(j, c) done, or
//                 B/BW(j, c') of the next stage done here when local, or nothing for the last
//                 stage (its gradient comes from the loss, computed by its own F);
//       W(j, c)   B(j, c) done here;
//     a send needs the op that produced its tensor done (F for send_act, B/BW for send_grad);
//   * every rank runs, for every (j, c) of its chunks, F once and either BW once or B and W once.
// A message is named by (activation or gradient, j, the stage it leaves); the executor can use
// that as the MPI tag, so messages between two ranks never need to arrive in list order.
#pragma once
#include <string>
#include <vector>

namespace usp::ch08 {

enum class OpKind : unsigned char { F, B, W, BW, send_act, recv_act, send_grad, recv_grad };

// "F", "B", "W", "BW", "send_act", ...
const char* op_kind_name(OpKind kind);
bool is_compute(OpKind kind);  // F, B, W, BW

struct Op {
  OpKind kind = OpKind::F;
  int mb = 0;     // micro-batch index j, 0 .. m-1
  int chunk = 0;  // this rank's model chunk c, 0 .. v-1
  bool operator==(const Op&) const = default;
};

// "F(3, 1)" (chunk shown only when v > 1: "F3").
std::string op_name(const Op& op, int v);

// Which virtual stage each rank holds as each of its chunks.
struct StageLayout {
  int p = 1, v = 1;
  std::vector<int> stage;  // [p·v]: stage[r·v + c] = the virtual stage rank r runs as chunk c

  int num_stages() const { return p * v; }
  int stage_of(int rank, int chunk) const { return stage[static_cast<std::size_t>(rank * v + chunk)]; }
  int rank_of(int s) const;   // the rank holding virtual stage s
  int chunk_of(int s) const;  // its chunk there

  // Megatron-LM's layout: chunk c of rank r is stage c·p + r (v = 1: rank r holds stage r).
  static StageLayout looped(int p, int v);
  // DualPipeV's "V": v = 2, chunk 0 of rank r is stage r, chunk 1 is stage 2p-1-r. A micro-batch
  // goes down the ranks through their chunk 0, turns on rank p-1 (stages p-1 and p are both
  // there: a local hand-over, no message) and comes back up through the chunks 1 to rank 0,
  // which computes the loss; its gradient retraces the V.
  static StageLayout v_shape(int p);
};

enum class ScheduleKind : unsigned char { afab, one_f_one_b, interleaved_1f1b, zb_h1, zb_h2, dualpipev };

// "afab", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipev" (what --schedule takes); parse
// throws UsageError.
const char* schedule_kind_name(ScheduleKind kind);
ScheduleKind parse_schedule_kind(const std::string& text);
std::vector<ScheduleKind> all_schedule_kinds();

struct Schedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int p = 1, m = 1, v = 1;
  StageLayout layout;
  std::vector<std::vector<Op>> ops;  // [p]: each rank's ordered list, communication included
};

// The rank that sends to / receives from `op` (a communication op run by `rank`), by the layout.
int peer_rank(const StageLayout& layout, int rank, const Op& op);

// The chunks per rank a schedule runs: v for interleaved, 2 for DualPipeV, 1 for the others.
int chunks_of(ScheduleKind kind, int v);

// The schedule `kind` for p ranks, m micro-batches and v chunks per rank, communication
// included. Throws UsageError for parameters the schedule does not support, saying why:
//   p, m, v >= 1 always; v > 1 only for interleaved, which also needs m a multiple of p
//   (Megatron-LM's micro-batches go through the chunks in groups of p); DualPipeV runs v = 2
//   (the V) and needs m >= 2p (its steady phase pairs micro-batches from both arms of the V).
Schedule make_schedule(ScheduleKind kind, int p, int m, int v = 1);

// Exercise 08.1 (solutions/08_pipeline_parallel/communication.cpp): the lists the executor runs,
// from each rank's compute order.
// Input: compute [any number of ranks, list r being rank r's], each list holding only F, B, W and
//   BW ops in the order that rank computes them; `layout` says which stage each (rank, chunk) is.
// Output: for every rank, its compute ops in the same order, with the messages the semantics
//   above require of them inserted, and nothing else:
//   - exactly the messages that exist: one per tensor crossing a boundary between stages held by
//     different ranks, in each direction the tensor travels; none where the neighbouring stage is
//     on the same rank (a local hand-over), none before stage 0 or after the last stage;
//   - each receive as late as it can be: immediately before the first compute op that needs its
//     tensor; each send as early as it can be: immediately after the op that produced its tensor.
//     With buffered sends the lists then wait for nothing the compute order does not already
//     make them wait for, and validate_schedule accepts them whenever the compute order is one an
//     executor could run.
// Errors (usp::Error, thrown before anything is returned, the message exactly):
//   "rank <r>'s compute list holds <kind>: communication is added here, not by the schedule's order"
//   "rank <r>'s compute list names chunk <c> of v = <v>"                     (c outside 0..v-1)
std::vector<std::vector<Op>> with_communication(const StageLayout& layout,
                                                const std::vector<std::vector<Op>>& compute);

}  // namespace usp::ch08
