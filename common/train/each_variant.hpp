// The variants of a chapter trained side by side (chapters 06, 07 and 09): each in turn, on every
// rank, until an exercise they call is still a stub.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "common/runtime.hpp"

namespace usp {

// Calls train(i) for i = 0 .. count-1 on every rank. Returns true when every variant trained;
// false when one threw NotImplemented on every rank (Runtime::skip_if_not_implemented): the rest
// are skipped together and rank 0 says "\n<skipped> (<the stub's message>)\n", e.g. skipped =
// "the layouts: skipped until exercises 06.1 and 06.2 are written".
bool train_each_variant(Runtime& rt, std::size_t count, const std::string& skipped,
                        const std::function<void(std::size_t i)>& train);

}  // namespace usp
