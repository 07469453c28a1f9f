// Exercise 10.1: the planner's memory filter and TP's communication term. The contract is in
// chapters/10_5d_parallelism/planner_terms.hpp, the idea in the chapter's README ("Exercise 10.1").
#include "chapters/10_5d_parallelism/planner_terms.hpp"

#include "common/calc/memory_model.hpp"
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

}  // namespace usp::plan
