// Work that only rank 0 does (writing a checkpoint, a report file) whose outcome every rank must
// share: principle 5, loud collective failure. run_on_root runs `work` on rank 0 of comm, catching
// what it throws, and broadcasts the outcome; then every rank returns, or every rank throws the
// same exception (a UsageError stays one, anything else becomes an Error with the same message,
// prefixed by `what_failed`). The broadcast completes on the other ranks only after rank 0 has
// finished: it is also the barrier after which every rank may read what rank 0 wrote.
// Collective over comm (use a communicator whose byte counters do not matter).
#pragma once
#include <functional>
#include <string>

#include "common/comm/communicator.hpp"

namespace usp {

void run_on_root(Communicator& comm, const std::string& what_failed, const std::function<void()>& work);

}  // namespace usp
