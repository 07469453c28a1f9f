// What the trainer's runs print and write: per layout, the losses next to the single-device run,
// and per rank its coordinates, memory measured vs the calculator, and bytes sent per dimension;
// layout_ranks.csv with the same rows.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "chapters/10_5d_parallelism/layout_run.hpp"

namespace usp::ch10 {

void print_layout_run(std::ostream& os, const LayoutRun& run);
// layout,moe,rank,dp,tp,cp,pp,params,calc_params,grads,calc_grads,optimizer,calc_optimizer,
// activations,sent_tp,sent_cp,sent_dp_cp,sent_pp,sent_ep
std::string layout_ranks_csv(const std::vector<LayoutRun>& runs);

}  // namespace usp::ch10
