#include "chapters/10_5d_parallelism/layout_5d.hpp"

#include "chapters/07_context_parallel/cp_mesh_layout.hpp"
#include "chapters/08_pipeline_parallel/stage_split.hpp"
#include "common/error.hpp"
#include "common/model/params.hpp"

namespace usp::ch10 {

Layout5d layout_5d(int dp, int tp, int pp, int cp, int ep, int zero, ch08::ScheduleKind schedule, int m, int v,
                   ch07::CpAttention attention) {
  Layout5d l;
  l.dp = dp, l.tp = tp, l.pp = pp, l.cp = cp, l.ep = ep, l.zero = zero, l.schedule = schedule, l.m = m, l.v = v;
  l.attention = attention;
  return l;
}

std::string Layout5d::label() const {
  std::string s;
  const auto dim = [&](const char* name, int n) {
    if (n > 1) s += (s.empty() ? "" : "·") + std::string(name) + std::to_string(n);
  };
  dim("dp", dp);
  dim("ep", ep);
  dim("cp", cp);
  dim("tp", tp);
  dim("pp", pp);
  if (s.empty()) s = "1 rank";
  if (zero > 0) s += " zero" + std::to_string(zero);
  return s;
}

void check_layout_5d(const Layout5d& l, int world_size, const ModelConfig& model, std::int64_t seq) {
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.cp < 1 || l.ep < 1)
    throw UsageError("--dp, --tp, --pp, --cp and --ep must be >= 1");
  if (l.world() != world_size)
    throw UsageError("the mesh dp " + str(l.dp) + " × tp " + str(l.tp) + " × pp " + str(l.pp) + " × cp " + str(l.cp) +
                     " = " + str(l.world()) + " ranks does not match the " + str(world_size) + " ranks of this run");
  if (l.zero != 0 && l.zero != 1)
    throw UsageError("--zero " + str(l.zero) + ": the 5D trainer shards optimizer states (ZeRO-1) or nothing (0); "
                     "chapter 05 trains ZeRO-2 and -3");
  // TP and CP: chapter 07's checks (its CP × TP layout, on this layout's dp·cp·tp ranks).
  ch07::check_cp_layout(ch07::CpLayout{l.dp, l.cp, l.sharding, l.attention, l.tp}, l.dp * l.cp * l.tp, model, seq);
  if (model.is_moe() && l.cp > 1)
    throw UsageError("a mixture of experts with --cp " + str(l.cp) +
                     ": the router's capacity and load-balancing loss would see a rank's share of each sequence, "
                     "not the whole one, so the run would not be the single-device one");
  // PP: chapter 08's checks.
  (void)ch08::split_units(model, l.pp * ch08::chunks_of(l.schedule, l.v));
  (void)ch08::make_schedule(l.schedule, l.pp, l.m, l.v);
  const bool splits_backward = l.schedule == ch08::ScheduleKind::zb_h1 || l.schedule == ch08::ScheduleKind::zb_h2 ||
                               l.schedule == ch08::ScheduleKind::dualpipev;
  if (splits_backward && l.tp > 1)
    throw UsageError(std::string("--schedule ") + ch08::schedule_kind_name(l.schedule) +
                     " splits each backward into B and W with the single-device ops; with --tp " + str(l.tp) +
                     " use afab, 1f1b or interleaved");
  // EP.
  check_ep_shard(model, EpShard{l.ep, 0});
  if ((l.dp * l.cp) % l.ep != 0)
    throw UsageError("--ep " + str(l.ep) + " must divide dp·cp = " + str(l.dp * l.cp) +
                     " (the experts are spread over ranks that are data-parallel for everything else)");
  if (l.zero == 1 && l.ep > 1)
    throw UsageError("--zero 1 with --ep " + str(l.ep) +
                     ": the experts' states would shard over their own group; this trainer shards dense models only");
}

}  // namespace usp::ch10
