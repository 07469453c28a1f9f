// The collectives of the playbook's appendix A0, each on a small tensor, with every rank's
// values before and after. Each demo_* function runs one collective (collective: every rank of
// comm calls it, in the same order) and returns what *this* rank held; printing is separate
// (print_demo), so tests can check the numbers without reading text.
//
// The setups are A0's, for any number of ranks n (r = this rank):
//   broadcast       rank 0 holds [1,2,3,4,5], the others zeros(5); broadcast from rank 0
//   reduce          [1,2,3,4,5]·(r+1), summed onto rank 0      (n = 3: [6,12,18,24,30])
//   all_reduce      [1,2,3,4,5]·(r+1), summed onto every rank  (n = 3: [6,12,18,24,30])
//   gather          ones(5)·(r+1), collected on rank 0 as n tensors
//   all_gather      ones(5)·(r+1), collected on every rank
//   scatter         rank 0 holds n tensors, the j-th is ones(5)·(j+1); rank j receives it
//   reduce_scatter  rank r holds n tensors, the j-th is [(r+1)·1, (r+1)·2]^(j+1); rank j
//                   receives the sum over r of the j-th   (n = 3: [6,12], [14,56], [36,288])
//   barrier         rank r sleeps r·step seconds, then waits at the barrier: everyone leaves
//                   when the last one arrives, after (n-1)·step seconds
//   all_to_all      rank r holds [10(r+1) + (j+1) for j < n]: element j goes to rank j, so
//                   rank r ends with [10(i+1) + (r+1) for i < n], a transpose (A0 has no
//                   all-to-all example; this one reads "from, to" in the digits)
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"

namespace usp::ch00 {

// What one rank holds at one moment: a list of 1-d tensors' values (most demos hold one;
// gather's root ends with n). Empty: nothing to show on this rank at that moment.
using Held = std::vector<std::vector<float>>;

struct DemoOutcome {
  std::string collective;  // "broadcast", "all_reduce", ...
  std::string setup;       // one line saying what the ranks start with
  Held before, after;      // this rank's values; for barrier: {{seconds slept}}, {{seconds at exit}}
};

DemoOutcome demo_broadcast(Communicator& comm);
DemoOutcome demo_reduce(Communicator& comm);
DemoOutcome demo_all_reduce(Communicator& comm);
DemoOutcome demo_gather(Communicator& comm);
DemoOutcome demo_all_gather(Communicator& comm);
DemoOutcome demo_scatter(Communicator& comm);
DemoOutcome demo_reduce_scatter(Communicator& comm);
DemoOutcome demo_barrier(Communicator& comm, double step_seconds);
DemoOutcome demo_all_to_all(Communicator& comm);

// Prints one demo on rank 0 of comm: the setup, every rank's "before" in rank order, then every
// rank's "after". Collective: the other ranks send their lines to rank 0, which alone writes.
void print_demo(Communicator& comm, const DemoOutcome& outcome, std::ostream& out);

// Runs and prints the nine demos in the order above; returns this rank's outcomes.
std::vector<DemoOutcome> run_demos(Communicator& comm, std::ostream& out, double barrier_step_seconds);

// Collects one string from every rank on rank 0 of comm, in rank order (collective). Rank 0
// gets all n strings; the other ranks get an empty vector.
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine);

// "[1, 2, 3]" for one tensor, "[[1, 1], [2, 2]]" for a list of them.
std::string held_str(const Held& held);

}  // namespace usp::ch00
