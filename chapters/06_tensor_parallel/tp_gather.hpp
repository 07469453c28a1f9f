// Moving between a tensor-parallel shard and the whole model: gathering every parameter's
// shards into the unsharded tensor (to compare with the single-device baseline, or to save a
// Hugging Face checkpoint), and cutting a rank's shard out of a whole model (loading a
// checkpoint into any TP degree: resharding is just taking another slice).
//
// A shard split along rows (column-parallel weights, the vocabulary) is one contiguous block of
// the unsharded tensor, so an all-gather in rank order rebuilds it as it is; a shard split along
// columns (o_proj, down_proj) is a block of every row, so the gathered [t, rows, cols/t] is
// interleaved back into [rows, cols]. ParamInfo::full_index says where each element goes.
#pragma once
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/model/params.hpp"

namespace usp::ch06 {

// Every parameter unsharded, as f32, laid out as the single-device flat buffer
// (llama_param_layout(config) without a shard). Collective over tp, the group the shards are
// split over (tp.size() must be the store's TpShard size; rank order = shard order).
std::vector<float> gather_full_parameters(const ParamStore& shard, Communicator& tp);

// Fills shard's parameters with its slice of `whole` (a store of the same config without a
// shard, any dtype): no communication, every rank takes its own slice.
void load_shard(const ParamStore& whole, ParamStore& shard);

}  // namespace usp::ch06
