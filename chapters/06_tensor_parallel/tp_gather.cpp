#include "chapters/06_tensor_parallel/tp_gather.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch06 {

std::vector<float> gather_full_parameters(const ParamStore& shard, Communicator& tp) {
  USP_CHECK(tp.size() == shard.layout().tp.size,
            "gather_full_parameters: the group has " + std::to_string(tp.size()) + " ranks, the store is a " +
                std::to_string(shard.layout().tp.size) + "-way shard");
  const std::vector<ParamInfo> full_layout = llama_param_layout(shard.config());
  const ParamInfo& last = full_layout.back();
  std::vector<float> out(static_cast<std::size_t>(last.offset + last.numel));
  const std::vector<ParamInfo>& infos = shard.infos();
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParamInfo& p = infos[i];
    float* dst = out.data() + full_layout[i].offset;
    const std::vector<float> mine = shard.param(static_cast<int>(i)).to_floats();
    if (p.split_dim < 0) {  // replicated: every rank has it whole
      std::copy(mine.begin(), mine.end(), dst);
      continue;
    }
    // Every rank's shard, in rank order: [t · numel], through the group's device.
    const Tensor local = Tensor::from_floats(mine, {p.numel}).to(tp.device(), MemCategory::Temporary);
    Tensor all = Tensor::empty({p.numel * tp.size()}, DType::f32, MemCategory::Temporary, tp.device());
    tp.all_gather(local, all);
    const std::vector<float> everyone = all.to_floats();
    const float* a = everyone.data();
    // Shard r's element j sits at the index its own ParamInfo would give: the same layout with
    // shard_begin moved to r's block.
    ParamInfo other = p;
    for (int r = 0; r < tp.size(); ++r) {
      other.shard_begin = r * p.shape[static_cast<std::size_t>(p.split_dim)];
      for (std::int64_t j = 0; j < p.numel; ++j) dst[other.full_index(j)] = a[r * p.numel + j];
    }
  }
  return out;
}

void load_shard(const ParamStore& whole, ParamStore& shard) {
  USP_CHECK(whole.layout().tp.size == 1, "load_shard: the source must be the whole (unsharded) model");
  const std::vector<ParamInfo>& infos = shard.infos();
  USP_CHECK(infos.size() == whole.infos().size(), "load_shard: the two stores hold different models");
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParamInfo& p = infos[i];
    const std::vector<float> all = whole.param(static_cast<int>(i)).to_floats();
    std::vector<float> mine(static_cast<std::size_t>(p.numel));
    for (std::int64_t j = 0; j < p.numel; ++j) mine[static_cast<std::size_t>(j)] = all[static_cast<std::size_t>(p.full_index(j))];
    Tensor dst = shard.param(static_cast<int>(i));
    dst.copy_from(Tensor::from_floats(mine, p.shape, dst.dtype()));  // rounded to the store's dtype
  }
}

}  // namespace usp::ch06
