// What the trainer's runs print and write: per layout, the losses next to the single-device run,
// and per rank its coordinates, memory measured vs the calculator, and bytes sent per dimension;
// layout_ranks.csv with the same rows, and summary.json's "layouts" (report::Table).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "chapters/10_5d_parallelism/layout_run.hpp"
#include "common/report/table.hpp"

namespace usp::ch10 {

void print_layout_run(std::ostream& os, const LayoutRun& run);
// One row per rank of each run. Terminal: the per-rank table print_layout_run shows (memory in
// KiB against the calculator); CSV (layout_ranks.csv): layout,moe,rank,dp,tp,cp,pp,params,
// calc_params,grads,calc_grads,optimizer,calc_optimizer,activations,sent_tp,sent_cp,sent_dp_cp,
// sent_pp,sent_ep.
report::Table layout_ranks_table(const std::vector<LayoutRun>& runs);
// One row per run, for summary.json: layout, moe, losses, max_relative_loss_gap,
// memory_as_predicted, median_step_seconds.
report::Table layouts_table(const std::vector<LayoutRun>& runs);

}  // namespace usp::ch10
