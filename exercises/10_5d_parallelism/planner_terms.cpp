// Exercise 10.1: the planner's model of one layout (memory, TP, DP and the pipeline's point to
// point). The contract is in chapters/10_5d_parallelism/planner_terms.hpp, the idea in the
// chapter's README ("Exercise 10.1").
#include "chapters/10_5d_parallelism/planner_terms.hpp"

#include "common/error.hpp"

namespace usp::plan {

std::int64_t layout_bytes(const PlanLayout& l) {
  (void)l;
  throw NotImplemented("exercise 10.1: layout_bytes (the memory-feasibility filter)");
}

double tp_seconds(const PlanLayout& l, const Cluster& cluster) {
  (void)l;
  (void)cluster;
  throw NotImplemented("exercise 10.1: tp_seconds (TP's communication per step)");
}

double dp_seconds(const PlanLayout& l, const Cluster& cluster, const StepFit& fit, double compute_seconds) {
  (void)l;
  (void)cluster;
  (void)fit;
  (void)compute_seconds;
  throw NotImplemented("exercise 10.1: dp_seconds (the DP collectives per step, what the backward hides)");
}

double pp_p2p_seconds(const PlanLayout& l, const Cluster& cluster, const StepFit& fit) {
  (void)l;
  (void)cluster;
  (void)fit;
  throw NotImplemented("exercise 10.1: pp_p2p_seconds (the pipeline's point to point per step)");
}

}  // namespace usp::plan
