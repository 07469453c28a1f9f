// The real executor: one rank's list of a Schedule (schedule.hpp), run op by op on the model's
// stages over a pipeline-parallel communicator. The simulator (schedule_simulator.hpp) times the
// very same lists; this runs them.
//
//   F(j, c)          chunk c's model forward of micro-batch j, from the tokens (stage 0), the
//                    received activation, or the previous stage's output when it is local
//   B / BW / W       backward_stage (B with the weight-gradient products queued, see
//                    weight_grad_queue.hpp; W runs them)
//   send_act/grad    a non-blocking send (the tensor is kept until the message is out)
//   recv_act/grad    a blocking receive: the rank waits, which is where the bubble shows
// A message's MPI tag is its Message (schedule_replay.hpp): (mb · S + from_stage) · 2 + gradient,
// so messages between two ranks never need to arrive in list order.
//
// What the step records (ExecutedStep): every op's start and end on this rank (µs from the
// step's start, which a barrier makes common to the ranks), the micro-batches' losses (last
// stage), the activations in flight after each op (the chunks' forwards waiting for their
// backward, plus the micro-batches whose W is still queued: the simulator's count) and the
// tracker's Activation bytes. With the tracer enabled, each compute op is a "compute" span
// named like the simulator's Gantt cells ("F3", "B3.1", ...).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/weight_grad_queue.hpp"
#include "common/comm/communicator.hpp"
#include "common/data/dataset.hpp"
#include "common/model/model.hpp"

namespace usp::ch08 {

struct ExecutedOp {
  int index = 0;  // in the rank's list
  double start_us = 0, end_us = 0;
  int in_flight = 0;                     // activations in flight after the op
  std::int64_t activation_bytes = 0;     // the tracker's Activation bytes after the op
};

struct ExecutedStep {
  std::vector<ExecutedOp> ops;  // this rank's list, in order
  double loss_sum = 0;          // Σ over micro-batches of their mean loss (last stage; else 0)
  int peak_in_flight = 0;
  std::int64_t peak_activation_bytes = 0;  // the tracker's peak during the step
};

class PipelineExecutor {
 public:
  // chunks[c]: the model of this rank's chunk c (virtual stage s.layout.stage_of(rank, c)), every
  // one built with `queue` as its LinearHook. pp: the pipeline group (its rank = the
  // schedule's rank). Not owned.
  PipelineExecutor(Communicator& pp, const Schedule& s, std::vector<Model*> chunks, WeightGradQueue& queue);

  // Runs this rank's list once (collective over pp): micro_batches[j] holds micro-batch j's
  // tokens and targets (every rank is given them; stage 0 reads the tokens, the last stage the
  // targets). Each micro-batch's backward starts from loss_scale · its mean loss.
  ExecutedStep run(const std::vector<Batch>& micro_batches, float loss_scale);

  // Evaluation, collective over pp: `batch` forward-only through every virtual stage in order
  // (Model::evaluate_stage: nothing kept, no hooks, Temporaries only), each stage's output sent
  // to the rank of the next stage (tag: the sending stage) or handed to the local chunk; this
  // rank's sends are waited for before it returns. Returns the batch's mean loss on the rank of
  // the last stage, 0 on the others (the caller shares it, as the step's loss). Not recorded in
  // an ExecutedStep, not traced; every rank is given the same batch.
  double evaluate(const Batch& batch);

 private:
  using Key = std::pair<int, int>;  // (micro-batch, chunk)
  Communicator& pp_;
  const Schedule& s_;
  std::vector<Model*> chunks_;
  WeightGradQueue& queue_;
  int rank_;
  // Tensors waiting for the op that uses them: inputs (received or handed over), outputs (until
  // sent or handed over), received output gradients, input gradients to pass back.
  std::map<Key, Tensor> act_in_, act_out_, grad_in_, grad_out_;
  std::vector<std::pair<WorkHandle, Tensor>> sending_;

  void run_op(const Op& op, const std::vector<Batch>& micro_batches, float loss_scale, ExecutedStep& step);
  Tensor take(std::map<Key, Tensor>& from, Key key, const char* what, const Op& op);
  int tag_of(const Op& op) const;
  int in_flight() const;
  void reap_sends(bool wait_all);
};

}  // namespace usp::ch08
