// The per-unit plan of ZeRO-2 and ZeRO-3: what to gather, prefetch, free and reduce around each
// unit's forward and backward. A pure function of the model's shape (docs/ARCHITECTURE.md,
// principle 4: the executor in zero_trainer.cpp runs it; a cost model can time the same plan).
//
// One micro-batch is 2·(L+2) compute steps: forward of units 0 (embedding), 1..L (layers), L+1
// (final norm + head), then backward of L+1 down to 0. A step READS the full parameters of its
// unit, and the head also those of the embedding when they are tied. For each step:
//
//   ZeRO-3  gather    the units it reads that no earlier step prefetched: all-gathered (and
//                     waited for) before it runs;
//           prefetch  with prefetch on, the units the NEXT step reads that this one does not:
//                     their all-gather is launched as this step starts, so it runs while this
//                     step computes;
//           release   everything it read: freed as soon as it has run. (The head is read by the
//                     last forward and the first backward step back to back; it is released and
//                     gathered again all the same, so every unit is gathered exactly twice per
//                     micro-batch: the playbook's 2Ψ of all-gather. PyTorch FSDP keeps it instead
//                     and saves that one gather.)
//   ZeRO-2/3 open_grads    before a backward step: the units whose gradients it is the first to
//                          write get a full (unit-sized) gradient buffer, zeroed;
//           reduce_grads  after a backward step: the units no later step writes are complete:
//                          reduce-scatter their gradient to the shards and free the buffer.
//
// At any moment a rank holds the full parameters of at most the current step's units plus the
// prefetched ones: 2 units for an untied model (1 without prefetch). max_units_held() says it.
#pragma once
#include <string>
#include <vector>

namespace usp::ch05 {

struct UnitStep {
  bool backward = false;
  int unit = 0;
  std::vector<int> reads;         // units whose full parameters this step uses
  std::vector<int> gather;        // ZeRO-3: gathered (synchronously) before the step
  std::vector<int> prefetch;      // ZeRO-3: gather launched at the step's start, for the next step
  std::vector<int> release;       // ZeRO-3: freed after the step
  std::vector<int> open_grads;    // ZeRO-2/3: gradient buffers allocated before the step
  std::vector<int> reduce_grads;  // ZeRO-2/3: reduce-scattered and freed after the step
  std::string name() const;       // "forward unit 3", "backward unit 0"
};

// num_units = L + 2. tied: the head reads the embedding (unit 0) too.
std::vector<UnitStep> unit_schedule(int num_units, bool tied, bool prefetch);

// The most units whose full parameters are held at once under ZeRO-3: the largest
// |reads| + |prefetch| over the steps.
int max_units_held(const std::vector<UnitStep>& plan);
// How many times each unit is all-gathered per micro-batch ([num_units]).
std::vector<int> gathers_per_unit(const std::vector<UnitStep>& plan, int num_units);

}  // namespace usp::ch05
