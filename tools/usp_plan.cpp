// usp_plan: the best layouts of a model on a GPU cluster, by predicted MFU (chapter 10's planner:
// chapters/10_5d_parallelism/planner.hpp).
//
//   usp_plan --model M --nodes N [--gpus-per-node 8] [--seq 4096] [--global-batch-tokens 1048576]
//            [--cluster FILE] [--tp T] [--pp P] [--top K] [--json]
//   (cluster files: chapters/10_5d_parallelism/clusters/, the playbook's H100 nodes and ORNL Frontier)
//
// Every layout dp · tp · pp · cp of the cluster's GPUs with ZeRO 0-3, micro-batch 1-8, each
// recomputation mode and (with pp > 1) 1F1B or ZB-H1 is kept if its most loaded rank fits in a GPU
// (usp_calc's memory model per stage, plus the last stage's logits), timed by the step model
// (compute at a fitted efficiency, each collective over the nodes its group spans at NCCL's
// measured bandwidth, the schedule's bubble from chapter 08's simulator), and ranked by MFU. The text shows why each term costs what
// it costs; --json prints {"best": [{dp, tp, pp, cp, ep, zero, mbs, gas, recompute, schedule,
// memory_bytes, step_seconds, tokens_per_second_per_gpu, mfu, ...}], "tied_with_best": N, ...}. When
// several layouts predict an MFU within the step model's own error of the best (kModelError), it
// says so: a tie it cannot break, for a measurement to settle.
#include <cstdio>
#include <iostream>
#include <string>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/tool_main.hpp"
#include "chapters/10_5d_parallelism/planner.hpp"

namespace {

using namespace usp;
using namespace usp::plan;

Cli make_cli() {
  Cli cli("usp_plan",
          "The best parallel layouts of a model on a GPU cluster (dp, tp, pp, ZeRO, micro-batch, gradient\n"
          "accumulation, recomputation), ranked by predicted MFU. Default cluster: the Ultra-Scale\n"
          "Playbook's H100 nodes and their measured NCCL bandwidth.");
  cli.add_string("model", "", "built-in model name (e.g. playbook-8.86b, llama3.1-70b)");
  cli.add_int("nodes", 1, "nodes", 1, 1 << 16);
  cli.add_int("gpus-per-node", 0, "GPUs per node (default: the cluster's)", 0, 1024);
  cli.add_int("seq", 4096, "sequence length", 1, 1 << 24);
  cli.add_int("global-batch-tokens", 1 << 20, "tokens per optimizer step", 1, std::int64_t{1} << 40);
  cli.add_string("cluster", "",
                 "a JSON file describing the cluster (shipped: chapters/10_5d_parallelism/clusters/playbook_h100.json,\n"
                 "frontier_mi250x.json; the format: chapters/10_5d_parallelism/cluster.hpp)");
  cli.add_int("tp", 0, "only layouts with this tensor-parallel size (0: search)", 0, 1 << 16);
  cli.add_int("pp", 0, "only layouts with this many pipeline stages (0: search)", 0, 1 << 16);
  cli.add_int("top", 5, "how many layouts to show", 1, 1000);
  cli.add_flag("json", "print JSON instead of the table");
  return cli;
}

// Every layout of req on the cluster that fits, best first; UsageError when none factors the GPUs.
std::vector<PlannedLayout> search(const PlanRequest& req, const Cluster& cluster) {
  SearchCounts counts;
  std::vector<PlannedLayout> all = search_layouts(req, cluster, &counts);
  if (counts.factored == 0) {
    const std::int64_t world = static_cast<std::int64_t>(req.nodes) * cluster.gpus_per_node;
    throw UsageError("no layout factors the " + std::to_string(world) + " GPUs (" + std::to_string(req.nodes) +
                     " node(s) × " + std::to_string(cluster.gpus_per_node) + "): dp · tp · pp · cp must equal them with tp "
                     "and cp powers of two, pp dividing the " + std::to_string(req.model.layers) +
                     " layers, and dp · mbs dividing the " + std::to_string(req.global_batch_tokens / req.seq) +
                     " samples of a step (--global-batch-tokens / --seq); choose another --nodes (e.g. a power "
                     "of two)");
  }
  return all;
}

// --json: the request, and the first `top` layouts with their terms.
void print_json(const PlanRequest& req, const Cluster& cluster, const std::vector<PlannedLayout>& all, std::size_t top,
                std::size_t tied) {
  JsonWriter j;
  j.begin_object().field("model", req.model.name).field("nodes", req.nodes).field("gpus_per_node", cluster.gpus_per_node);
  j.field("seq", req.seq).field("global_batch_tokens", req.global_batch_tokens).field("layouts_that_fit", all.size());
  j.field("model_error", kModelError).field("tied_with_best", tied);
  j.key("best").begin_array();
  for (std::size_t i = 0; i < top; ++i) {
    const PlannedLayout& p = all[i];
    const calc::TrainingSetup& s = p.layout.setup;
    j.begin_object().field("dp", s.dp).field("tp", s.tp).field("pp", s.pp).field("cp", s.cp).field("ep", s.ep);
    j.field("zero", s.zero).field("mbs", s.mbs).field("gas", p.layout.gas).field("recompute", recompute_name(s.recompute));
    j.field("schedule", p.layout.schedule()).field("memory_bytes", p.memory_bytes).field("step_seconds", p.time.total());
    j.field("tokens_per_second_per_gpu", p.tokens_per_second_per_gpu).field("mfu", p.mfu);
    j.field("compute_seconds", p.time.compute).field("dp_seconds", p.time.dp).field("tp_seconds", p.time.tp);
    j.field("cp_seconds", p.time.cp);
    j.field("pp_bubble_seconds", p.time.pp_bubble).field("pp_p2p_seconds", p.time.pp_p2p);
    j.end_object();
  }
  j.end_array().end_object();
  std::cout << j.str() << '\n';
}

// The text: the request, the step model's constants, a tie when there is one, the first `top`
// layouts with their terms.
void print_table(const PlanRequest& req, const Cluster& cluster, const std::vector<PlannedLayout>& all,
                 std::size_t top, std::size_t tied) {
  std::printf("%s on %d node(s) of %d GPUs (%s): seq %lld, %lld tokens per step; %zu layouts fit in %.0f GB\n",
              req.model.str().c_str(), req.nodes, cluster.gpus_per_node, cluster.name.c_str(),
              static_cast<long long>(req.seq), static_cast<long long>(req.global_batch_tokens), all.size(),
              cluster.memory_bytes / 1e9);
  std::printf("step model: compute at %.0f%% of %.1f TFLOPS (and the GEMMs' HBM traffic at %.2f TB/s), collectives at\n"
              "%.0f%% of the measured bus bandwidth and %.1f us per ring step, %.0f%% of the backward hiding the DP\n"
              "collectives (fitted on the playbook's DP series; its leave-one-out error: up to %.0f%%)\n\n",
              100 * kComputeEfficiency, cluster.peak_flops / 1e12, cluster.hbm_bytes_per_second / 1e12,
              100 * kBandwidthEfficiency, 1e6 * kLatency, 100 * kOverlap, 100 * kModelError);
  if (tied > 1)
    std::printf("a tie: %zu layouts predict an MFU within %.0f%% of the best (%.1f%% to %.1f%%), the step model's\n"
                "error on a point it was not fitted to; it cannot rank them (marked ~ below): measure them\n\n",
                tied, 100 * kModelError, 100 * all[tied - 1].mfu, 100 * all.front().mfu);
  std::printf("  %3s %3s %3s %3s %4s %4s %4s %-9s %-5s | %8s %7s %6s | %7s %7s %7s %7s %7s %7s\n", "dp", "tp", "pp",
              "cp", "zero", "mbs", "gas", "recompute", "sched", "mem GB", "tok/s", "MFU", "step s", "compute", "DP", "TP",
              "CP", "PP");
  for (std::size_t i = 0; i < top; ++i) {
    const PlannedLayout& p = all[i];
    const calc::TrainingSetup& s = p.layout.setup;
    std::printf("%c %3lld %3lld %3lld %3lld %4d %4lld %4lld %-9s %-5s | %8.1f %7.0f %5.1f%% | %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n",
                tied > 1 && i < tied ? '~' : ' ', static_cast<long long>(s.dp), static_cast<long long>(s.tp), static_cast<long long>(s.pp),
                static_cast<long long>(s.cp), s.zero,
                static_cast<long long>(s.mbs), static_cast<long long>(p.layout.gas), recompute_name(s.recompute),
                p.layout.schedule().c_str(), static_cast<double>(p.memory_bytes) / 1e9, p.tokens_per_second_per_gpu,
                100 * p.mfu, p.time.total(), p.time.compute, p.time.dp, p.time.tp, p.time.cp, p.time.pp_bubble + p.time.pp_p2p);
  }
  if (all.empty()) std::printf("  (no layout fits in the GPUs' memory: more nodes, or a smaller model)\n");
}

int plan_main(int argc, char** argv) {
  Cli cli = make_cli();
  if (!parse_tool_flags(cli, argc, argv)) return 0;
  if (!cli.given("model")) throw UsageError("--model is required (a built-in name; usp_calc --list-models lists them)");
  PlanRequest req{ModelConfig::builtin(cli.get_string("model")), static_cast<int>(cli.get_int("nodes")),
                  cli.get_int("seq"), cli.get_int("global-batch-tokens"), cli.get_int("tp"), cli.get_int("pp")};
  Cluster cluster = cli.given("cluster") ? Cluster::from_file(cli.get_string("cluster")) : Cluster::playbook();
  if (cli.get_int("gpus-per-node") > 0) cluster.gpus_per_node = static_cast<int>(cli.get_int("gpus-per-node"));
  if (req.seq > req.model.max_seq)
    throw UsageError("--seq " + std::to_string(req.seq) + " exceeds the model's max_seq " + std::to_string(req.model.max_seq));
  const std::vector<PlannedLayout> all = search(req, cluster);
  const std::size_t top = std::min<std::size_t>(all.size(), static_cast<std::size_t>(cli.get_int("top")));
  const std::size_t tied = tied_with_best(all);
  if (cli.get_flag("json")) print_json(req, cluster, all, top, tied);
  else print_table(req, cluster, all, top, tied);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run_tool(argc, argv, plan_main); }
