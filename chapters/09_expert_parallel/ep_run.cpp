#include "chapters/09_expert_parallel/ep_run.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "chapters/09_expert_parallel/ep_checkpoint.hpp"
#include "common/report/median.hpp"
#include "common/report/row_gather.hpp"
#include "common/train/held_out_traffic.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch09 {

std::string EpVariant::label() const { return layout.label() + ", aux loss " + (aux ? "on" : "off"); }
std::string EpVariant::name() const { return "ep" + std::to_string(layout.ep) + (aux ? "_aux" : "_noaux"); }

double EpResult::median_step_seconds() const { return report::median(step_seconds); }

double EpResult::imbalance(std::size_t step, std::int64_t experts) const {
  const std::vector<std::int64_t>& k = kept[step];
  const std::size_t layers = k.size() / static_cast<std::size_t>(experts);
  double sum = 0;
  for (std::size_t l = 0; l < layers; ++l) {
    const auto begin = k.begin() + static_cast<std::ptrdiff_t>(l * static_cast<std::size_t>(experts));
    const auto end = begin + experts;
    const double total = static_cast<double>(std::accumulate(begin, end, std::int64_t{0}));
    sum += total > 0 ? static_cast<double>(*std::max_element(begin, end)) * static_cast<double>(experts) / total : 1.0;
  }
  return sum / static_cast<double>(layers);
}

double EpResult::late_imbalance(std::int64_t experts, std::size_t steps) const {
  const std::size_t n = std::min(steps, kept.size());
  double sum = 0;
  for (std::size_t s = kept.size() - n; s < kept.size(); ++s) sum += imbalance(s, experts);
  return sum / static_cast<double>(n);
}

int EpResult::first_divergence(const EpResult& other, double rel) const {
  for (std::size_t s = 0; s < losses.size() && s < other.losses.size(); ++s)
    if (std::fabs(losses[s] - other.losses[s]) > rel * other.losses[s]) return static_cast<int>(s);
  return -1;
}

EpResult run_ep_variant(VariantRunner& runner, Communicator& world, Communicator& metrics, TrainingConfig cfg,
                        const Dataset& data, const EpVariant& variant, const std::string& save_dir,
                        std::int64_t eval_batches) {
  if (!variant.aux) cfg.model.router_aux_loss_coef = 0;
  MemoryTracker& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  EpResult r;
  r.variant = variant;
  EpTrainer trainer(world, cfg, variant.layout);
  const std::int64_t E = cfg.model.experts;
  TrainingVariant steps{.name = variant.label()};
  steps.step = [&](std::int64_t step) {
    return trainer.step(rank_micro_batches(data, step, trainer.dp().rank(), variant.micro_batches, cfg.mbs, cfg.seq));
  };
  // Every rank's aux loss and routing, summed on every rank.
  steps.after_step = [&](std::int64_t) {
    struct StepRow {
      double aux;
      std::int64_t dropped;
    };
    StepRow mine{trainer.aux_loss(), 0};
    std::vector<std::int64_t> counts;  // routed per (layer, expert), then kept
    for (const MoeRouting& m : trainer.routing()) {
      counts.insert(counts.end(), m.routed.begin(), m.routed.end());
      mine.dropped += m.dropped;
    }
    for (const MoeRouting& m : trainer.routing()) counts.insert(counts.end(), m.kept.begin(), m.kept.end());
    const std::vector<StepRow> all = report::gather_rows(metrics, mine);
    const auto all_counts = report::gather_row_lists(metrics, counts);
    const std::size_t n = trainer.routing().size() * static_cast<std::size_t>(E);
    double aux_sum = 0;
    std::vector<std::int64_t> routed(n, 0), kept(n, 0);
    std::int64_t drops = 0;
    for (std::size_t w = 0; w < all.size(); ++w) {
      aux_sum += all[w].aux;
      for (std::size_t i = 0; i < n; ++i) routed[i] += all_counts[w][i], kept[i] += all_counts[w][n + i];
      drops += all[w].dropped;
    }
    r.aux.push_back(aux_sum / static_cast<double>(all.size()));
    r.routed.push_back(routed);
    r.kept.push_back(kept);
    r.dropped.push_back(drops);
  };
  HeldOutTraffic held_out(trainer.ep());
  if (eval_batches > 0)
    steps.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      return held_out.count(
          [&] { return validation_loss(metrics, trainer.model(), data, eval_batches, cfg.mbs, cfg.seq); });
    };
  const VariantRun run = runner.run(steps);
  r.losses = run.losses;
  r.step_seconds = run.step_seconds;
  r.val_steps = run.val_steps;
  r.val_losses = run.val_losses;
  const CommStats ep = held_out.training_stats();
  const std::uint64_t a2a = ep.sent(CommOp::all_to_allv) + ep.sent(CommOp::all_to_all);
  struct RankRow {
    std::int64_t a2a_bytes, params_held, peak_total;
  };
  const RankRow me{static_cast<std::int64_t>(a2a) / cfg.steps, trainer.params().numel(), tracker.peak_total()};
  for (const RankRow& w : report::gather_rows(metrics, me)) {
    r.a2a_bytes.push_back(w.a2a_bytes);
    r.params_held.push_back(w.params_held);
    r.peak_total.push_back(w.peak_total);
  }
  r.final_params = trainer.params().flat().to_floats();
  if (!save_dir.empty()) save_ep_checkpoint(metrics, trainer, save_dir);  // its outcome over the CPU ranks
  return r;
}

void check_ep_eval_batches(std::int64_t eval_batches, int dp) {
  if (eval_batches % dp != 0)
    throw UsageError("--eval-batches " + std::to_string(eval_batches) + " is not a multiple of the " +
                     std::to_string(dp) + " ranks: the ranks of an expert-parallel group exchange tokens at every MoE "
                     "layer, so each evaluates as many held-out batches");
}

}  // namespace usp::ch09
