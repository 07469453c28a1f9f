#include "common/train/each_variant.hpp"

#include <iostream>

namespace usp {

bool train_each_variant(Runtime& rt, std::size_t count, const std::string& skipped,
                        const std::function<void(std::size_t i)>& train) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::string missing = rt.skip_if_not_implemented([&] { train(i); });
    if (!missing.empty()) {
      if (rt.is_root()) std::cout << "\n" << skipped << " (" << missing << ")\n";
      return false;
    }
  }
  return true;
}

}  // namespace usp
