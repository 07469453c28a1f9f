// Exercise 09.2 — the combine's return trip. The contract is in
// chapters/09_expert_parallel/all_to_all_experts.hpp (AllToAllExperts::from_experts); the lesson
// (chapters/09_expert_parallel/README.md, "Moving tokens to experts") gives the idea and the
// questions. Useful: exercise 09.1's block_offsets, the Communicator's all_to_allv
// (common/comm/communicator.hpp), Tensor::slice and copy_from. Replace the throw with your code.
// Check it with: ./usp test 09.2 --exercises, then run it with ./usp run 09 --exercises
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/error.hpp"

namespace usp::ch09 {

void AllToAllExperts::from_experts(const ExpertRoute& /*route*/, const Tensor& /*results*/, Tensor& /*rows*/) {
  throw NotImplemented("exercise 09.2: AllToAllExperts::from_experts (the combine's return trip)");
}

}  // namespace usp::ch09
