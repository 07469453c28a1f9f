#include "chapters/10_5d_parallelism/layout_flags.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace usp::ch10 {

namespace {
// The flags that only go with a chosen layout.
constexpr const char* kLayoutChoices[] = {"zero", "schedule", "m", "v", "attention", "sharding"};
}  // namespace

bool layout_chosen(const Cli& cli) {
  return cli.given("dp") || cli.given("tp") || cli.given("pp") || cli.given("cp") || cli.given("ep");
}

Layout5d layout_from_flags(const Cli& cli, int W) {
  Layout5d l;
  l.tp = static_cast<int>(cli.get_int("tp"));
  l.pp = static_cast<int>(cli.get_int("pp"));
  l.cp = static_cast<int>(cli.get_int("cp"));
  l.dp = cli.given("dp") ? static_cast<int>(cli.get_int("dp")) : std::max(1, W / (l.tp * l.pp * l.cp));
  l.ep = static_cast<int>(cli.get_int("ep"));
  l.zero = static_cast<int>(cli.get_int("zero"));
  l.schedule = ch08::parse_schedule_kind(cli.get_string("schedule"));
  l.m = static_cast<int>(cli.get_int("m"));
  l.v = static_cast<int>(cli.get_int("v"));
  l.attention = cli.get_string("attention") == "ring"         ? ch07::CpAttention::ring
                : cli.get_string("attention") == "all-gather" ? ch07::CpAttention::all_gather
                                                              : ch07::CpAttention::all_to_all;
  l.sharding = cli.get_string("sharding") == "zig-zag" ? ch07::CpSharding::zigzag : ch07::CpSharding::contiguous;
  return l;
}

void require_layout_flags_used(const Cli& cli, int W) {
  if (!layout_chosen(cli)) {
    for (const char* flag : kLayoutChoices)
      if (cli.given(flag))
        throw UsageError(std::string("--") + flag +
                         " goes with a layout chosen by --dp, --tp, --pp, --cp or --ep; the default layouts set "
                         "their own (e.g. --pp 2 --" + flag + " ...)");
    return;
  }
  const Layout5d l = layout_from_flags(cli, W);
  const auto unused = [&](const char* flag, const std::string& needs) {
    if (cli.given(flag))
      throw UsageError(std::string("--") + flag + " acts only " + needs + "; this layout (" + l.label() +
                       ") would ignore it");
  };
  if (l.pp == 1) {
    unused("schedule", "with pipeline stages (--pp > 1)");
    unused("v", "with pipeline stages (--pp > 1)");
  }
  if (l.cp == 1) {
    unused("attention", "with context parallelism (--cp > 1)");
    unused("sharding", "with context parallelism (--cp > 1)");
  }
  if (l.zero == 1 && l.dp * l.cp == 1)
    throw UsageError("--zero 1 shards the optimizer states over the dp·cp replicas, and this layout (" + l.label() +
                     ") has one: nothing to shard");
}

}  // namespace usp::ch10
