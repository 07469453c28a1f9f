#include "chapters/06_tensor_parallel/tp_checkpoint.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/tp_gather.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/comm/root_outcome.hpp"
#include "common/io/checkpoint.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch06 {

namespace {

// Restarts the optimizer from the parameters now in the store: m = v = 0, step 0 and, for
// low-precision parameters, fp32 master weights = the new parameters widened (the master copy
// is what AdamW updates and writes back: a stale one would overwrite the loaded weights at the
// next step).
void restart_optimizer(AdamW& opt, const ParamStore& params) {
  USP_CHECK(opt.begin() == 0 && opt.end() == params.numel(),
            "load_tp_checkpoint: the optimizer must cover the whole shard");
  opt.m().zero();
  opt.v().zero();
  opt.set_step_count(0);
  if (opt.master().defined()) ops::convert(params.flat(), opt.master());  // on the store's device
}

}  // namespace

void save_tp_checkpoint(Communicator& world, TpTrainer& trainer, const std::string& dir) {
  // The dp replicas hold the same parameters (averaged gradients, the same AdamW step), so only
  // the replica of world rank 0 gathers its shards (ranks 0..t-1: the tp group is all in or all
  // out). The gather goes over the trainer's quiet copy of tp: tp()'s byte counters keep only
  // the training traffic.
  USP_CHECK(world.rank() != 0 || trainer.dp().rank() == 0, "save_tp_checkpoint: world rank 0 must be in replica 0");
  std::vector<float> full;
  if (trainer.dp().rank() == 0) full = trainer.full_parameters();
  // The outcome goes over a communicator of its own, for the same reason.
  const std::unique_ptr<Communicator> quiet = world.split(0, world.rank());

  run_on_root(*quiet, "cannot save the checkpoint '" + dir + "'", [&] {
    // The whole model, in the trainer's dtype: the gathered values were widened from it, so
    // rounding them back is exact. It lives (tracked as Parameter) until the files are written.
    const ParamStore& shard = trainer.params();
    ParamStore whole(shard.config(), shard.dtype(), Device::cpu(), /*with_grads=*/false);
    whole.flat().copy_from(Tensor::from_floats(full, {whole.numel()}, whole.dtype()));
    save_checkpoint(dir, whole);
  });
}

void load_tp_checkpoint(TpTrainer& trainer, const std::string& dir) {
  ParamStore& shard = trainer.params();
  // The whole model in the checkpoint's dtype (a Temporary object, tracked as Parameter while
  // it lives). load_params checks config.json's shape against ours and every tensor's name,
  // shape and dtype: UsageError naming the difference.
  ParamStore whole(shard.config(), load_dtype(dir), Device::cpu(), /*with_grads=*/false);
  load_params(dir, whole);
  load_shard(whole, shard);  // rounded to the trainer's dtype when the checkpoint's is wider
  restart_optimizer(trainer.optimizer(), shard);
}

}  // namespace usp::ch06
