#include "chapters/09_expert_parallel/ep_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>


namespace usp::ch09 {

namespace {

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

void print_losses(std::ostream& out, const std::vector<EpResult>& results) {
  out << "\n1. Losses per step (the mean cross-entropy over every rank's tokens; aux: the load-balancing loss)\n";
  for (const EpResult& r : results) {
    out << "  " << std::left << std::setw(28) << r.variant.label() << std::right;
    for (std::size_t s = 0; s < r.losses.size(); ++s)
      out << (s ? " " : "") << std::fixed << std::setprecision(5) << r.losses[s];
    out << "  | aux " << std::setprecision(4) << r.aux.front() << " -> " << r.aux.back() << "\n" << std::defaultfloat;
  }
  // The same objective on the same global batch: every ep computes the same step, up to the
  // order of fp32 sums (each expert's rows arrive in another order; the dense gradients are
  // averaged over ranks). Those rounding-level differences stay at that level until one of them
  // flips a nearly tied routing decision; from there the runs are different runs (chaotic, as any
  // two trainings that differ in one bit), which shows after some steps.
  for (bool aux : {true, false}) {
    const EpResult* first = nullptr;
    for (const EpResult& r : results) {
      if (r.variant.aux != aux) continue;
      if (!first) {
        first = &r;
        continue;
      }
      const int d = r.first_divergence(*first, 1e-6);
      out << "  " << r.variant.label() << " vs " << first->variant.label() << ": "
          << (d < 0 ? "the same losses to 1e-6 at every step"
                    : "the same losses to 1e-6 for the first " + std::to_string(d) +
                          " step(s); after that a rounding-level difference has flipped a routing decision and the "
                          "runs drift apart")
          << "\n";
    }
  }
}

void print_routing(std::ostream& out, const std::vector<EpResult>& results, const ModelConfig& model) {
  const std::int64_t E = model.experts;
  out << "\n2. Tokens per expert (layer 0, over all ranks: computed, after the capacity; routed in brackets when\n"
         "   some were dropped), and the imbalance max/mean over experts (mean over layers; 1 = balanced;\n"
         "   late: the mean over the last 5 steps)\n";
  for (const EpResult& r : results) {
    const std::size_t last = r.kept.size() - 1;
    auto row = [&](std::size_t s) {
      std::ostringstream o;
      for (std::int64_t e = 0; e < E; ++e) {
        const auto i = static_cast<std::size_t>(e);
        o << (e ? " " : "") << r.kept[s][i];
        if (r.routed[s][i] != r.kept[s][i]) o << "(" << r.routed[s][i] << ")";
      }
      return o.str();
    };
    out << "  " << r.variant.label() << "\n    step 0:   " << row(0) << "   imbalance " << std::fixed
        << std::setprecision(3) << r.imbalance(0, E) << "\n    step " << std::left << std::setw(4) << last
        << std::right << row(last) << "   imbalance " << r.imbalance(last, E) << std::defaultfloat
        << "\n    imbalance late " << std::fixed << std::setprecision(3) << r.late_imbalance(E) << std::defaultfloat
        << "; dropped assignments per step: " << r.dropped.front() << " -> " << r.dropped.back() << "\n";
    if (r.variant.layout.ep > 1) {
      // What each rank of an ep group computes: the rows of its E/ep experts, all layers.
      const std::int64_t ep = r.variant.layout.ep, L = E / ep;
      out << "    rows computed per ep rank, last step (all layers, over the dp/ep groups):";
      for (std::int64_t rank = 0; rank < ep; ++rank) {
        std::int64_t rows = 0;
        for (std::size_t i = 0; i < r.kept[last].size(); ++i)
          if (static_cast<std::int64_t>(i) % E / L == rank) rows += r.kept[last][i];
        out << " " << rows;
      }
      out << "\n";
    }
  }
}

void print_ranks(std::ostream& out, const std::vector<EpResult>& results, const TrainingConfig& cfg) {
  out << "\n3. Per rank: all-to-all bytes sent per step (the rows to other ranks' experts and the results of\n"
         "   theirs, forward and backward), parameters held, peak memory; step time (rank 0, median)\n";
  for (const EpResult& r : results) {
    out << "  " << r.variant.label() << ": step " << std::fixed << std::setprecision(1)
        << r.median_step_seconds() * 1e3 << " ms\n" << std::defaultfloat;
    for (std::size_t w = 0; w < r.a2a_bytes.size(); ++w)
      out << "    rank " << w << ": all-to-all " << std::fixed << std::setprecision(3) << mib(r.a2a_bytes[w])
          << " MiB/step, parameters " << mib(r.params_held[w] * static_cast<std::int64_t>(dtype_size(cfg.dtype)))
          << " MiB, peak " << mib(r.peak_total[w]) << " MiB\n" << std::defaultfloat;
  }
}

report::Table tokens_table(const std::vector<EpResult>& results, const ModelConfig& model) {
  report::Table t({{.key = "variant"}, {.key = "ep"}, {.key = "aux"}, {.key = "step"}, {.key = "layer"}, {.key = "expert"},
                   {.key = "routed"}, {.key = "kept"}});
  const std::int64_t E = model.experts;
  for (const EpResult& r : results)
    for (std::size_t s = 0; s < r.kept.size(); ++s)
      for (std::size_t i = 0; i < r.kept[s].size(); ++i)
        t.add({r.variant.name(), std::int64_t{r.variant.layout.ep}, std::int64_t{r.variant.aux ? 1 : 0},
               static_cast<std::int64_t>(s), static_cast<std::int64_t>(i) / E, static_cast<std::int64_t>(i) % E,
               r.routed[s][i], r.kept[s][i]});
  return t;
}

report::Table ranks_table(const std::vector<EpResult>& results) {
  report::Table t({{.key = "variant"}, {.key = "ep"}, {.key = "aux"}, {.key = "rank"}, {.key = "a2a_bytes_per_step"},
                   {.key = "params_held"}, {.key = "peak_total_bytes"}});
  for (const EpResult& r : results)
    for (std::size_t w = 0; w < r.a2a_bytes.size(); ++w)
      t.add({r.variant.name(), std::int64_t{r.variant.layout.ep}, std::int64_t{r.variant.aux ? 1 : 0},
             static_cast<std::int64_t>(w), r.a2a_bytes[w], r.params_held[w], r.peak_total[w]});
  return t;
}

void write_variants_json(JsonWriter& j, const std::vector<EpResult>& results, const ModelConfig& model) {
  j.key("variants").begin_array();
  for (const EpResult& r : results) {
    j.begin_object().field("variant", r.variant.name()).field("ep", r.variant.layout.ep).field("aux", r.variant.aux);
    j.key("losses").array(r.losses).key("aux_loss").array(r.aux).key("dropped").array(r.dropped);
    j.field("imbalance_first", r.imbalance(0, model.experts)).field("imbalance_late", r.late_imbalance(model.experts));
    j.key("a2a_bytes_per_step").array(r.a2a_bytes).key("params_held").array(r.params_held);
    j.field("step_seconds", r.median_step_seconds());
    j.end_object();
  }
  j.end_array();
}

}  // namespace usp::ch09
