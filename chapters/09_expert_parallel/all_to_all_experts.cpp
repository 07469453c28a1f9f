#include "chapters/09_expert_parallel/all_to_all_experts.hpp"

#include "common/error.hpp"

namespace usp::ch09 {

AllToAllExperts::AllToAllExperts(Communicator& ep, std::int64_t experts) : ep_(ep), experts_(experts) {
  USP_CHECK(experts_ > 0 && experts_ % ep_.size() == 0,
            "AllToAllExperts: " + std::to_string(experts_) + " experts over " + std::to_string(ep_.size()) + " ranks");
}

}  // namespace usp::ch09
