#include "chapters/09_expert_parallel/ep_checkpoint.hpp"

#include <map>
#include <memory>
#include <vector>

#include "common/comm/root_outcome.hpp"
#include "common/dtype.hpp"
#include "common/io/checkpoint.hpp"

namespace usp::ch09 {

void save_ep_checkpoint(Communicator& world, EpTrainer& trainer, const std::string& dir) {
  ParamStore& mine = trainer.params();
  const ModelConfig& model = mine.config();
  const std::int64_t ep = trainer.layout().ep;
  // This rank's experts, one after the other in its store's order (every rank of the group holds
  // as many elements, so a gather collects them), over a quiet copy of the ep group: its byte
  // counters keep only the training traffic.
  std::int64_t n = 0;
  for (const ParamInfo& p : mine.infos())
    if (p.expert >= 0) n += p.numel;
  Tensor experts = Tensor::empty({n}, mine.dtype(), MemCategory::CommBuffer);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < mine.infos().size(); ++i) {
    const ParamInfo& p = mine.infos()[i];
    if (p.expert < 0) continue;
    experts.view(at, {p.numel}).copy_from(mine.param(static_cast<int>(i)).reshape({p.numel}));  // from any device
    at += p.numel;
  }
  const std::unique_ptr<Communicator> quiet_ep = trainer.ep().split(0, trainer.ep().rank());
  const Device dev = quiet_ep->device();  // the group's tensors live there: the gather goes through it
  Tensor all = Tensor::empty({quiet_ep->rank() == 0 ? n * ep : n}, mine.dtype(), MemCategory::CommBuffer, dev);
  quiet_ep->gather(on_device(experts, dev, MemCategory::CommBuffer), all, 0);
  all = on_device(all, Device::cpu(), MemCategory::CommBuffer);
  const std::unique_ptr<Communicator> quiet = world.split(0, world.rank());
  run_on_root(*quiet, "cannot save the checkpoint '" + dir + "'", [&] {
    ParamStore whole(model, mine.dtype(), Device::cpu(), /*with_grads=*/false);
    std::map<std::string, Tensor> by_name;
    for (std::size_t i = 0; i < mine.infos().size(); ++i)
      if (mine.infos()[i].expert < 0) by_name[mine.infos()[i].name] = mine.param(static_cast<int>(i));
    // Rank r's experts are block r of the gather, in the order of its layout.
    for (std::int64_t r = 0; r < ep; ++r) {
      std::int64_t off = r * n;
      for (const ParamInfo& p : llama_param_layout(model, {}, EpShard{ep, r})) {
        if (p.expert < 0) continue;
        by_name[p.name] = all.view(off, p.shape);
        off += p.numel;
      }
    }
    for (std::size_t i = 0; i < whole.infos().size(); ++i) whole.param(static_cast<int>(i)).copy_from(by_name.at(whole.infos()[i].name));
    save_checkpoint(dir, whole);
  });
}

}  // namespace usp::ch09
