// What held-out evaluations send on a communicator that also carries the training (a tensor-
// parallel group inside the model's layers, an expert-parallel all-to-all): counted around each
// evaluation and taken out of the communicator's totals, so that a chapter's bytes per step stay
// the training steps' alone.
//
//   HeldOutTraffic held_out(trainer.tp());
//   variant.validation = [&](std::int64_t) { return held_out.count([&] { return validation_loss(...); }); };
//   ... after the steps: r.tp_comm = held_out.training_stats();   // tp().stats() less the evaluations'
#pragma once
#include <functional>

#include "common/comm/communicator.hpp"

namespace usp {

class HeldOutTraffic {
 public:
  explicit HeldOutTraffic(Communicator& comm) : comm_(comm) {}

  // Runs `evaluate` and adds what comm counted meanwhile to the evaluations' share.
  double count(const std::function<double()>& evaluate);
  // comm.stats() less every counted evaluation's share.
  CommStats training_stats() const;

 private:
  Communicator& comm_;
  CommStats evaluations_ = {};
};

}  // namespace usp
