// The per-thread FLOP counter the ops add to (see ops.hpp). Thread-local, so ranks run as
// threads and a progress thread never disturb each other's counts, and adding costs nothing.
#include "common/ops/ops.hpp"

namespace usp::ops {

namespace {
thread_local std::int64_t t_flops = 0;
}

std::int64_t flop_count() { return t_flops; }
void reset_flop_count() { t_flops = 0; }
void add_flops(std::int64_t n) { t_flops += n; }

}  // namespace usp::ops
