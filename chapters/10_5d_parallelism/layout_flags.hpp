// Chapter 10's layout flags: --dp --tp --pp --cp --ep choose one layout (layout_from_flags); the
// choices that go with a layout (--zero, --schedule, --m, --v, --attention, --sharding) act only
// on that chosen layout, each only where its dimension exists. A flag the run would not use is
// an error (require_layout_flags_used), never recorded in summary.json as if it had acted.
#pragma once
#include "chapters/10_5d_parallelism/layout_5d.hpp"
#include "common/cli.hpp"

namespace usp::ch10 {

// Whether a layout flag (--dp --tp --pp --cp --ep) was given: one chosen layout instead of the
// default list.
bool layout_chosen(const Cli& cli);
// The flags' layout: dp defaults to what W leaves.
Layout5d layout_from_flags(const Cli& cli, int world_size);
// UsageError for a flag given that the run ignores: without a chosen layout, every layout
// choice (the default layouts fix their own); with one, --schedule and --v without --pp > 1,
// --attention and --sharding without --cp > 1, --zero 1 without dp·cp > 1 replicas to shard over.
void require_layout_flags_used(const Cli& cli, int world_size);

}  // namespace usp::ch10
