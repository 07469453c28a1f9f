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
#include "common/io/checkpoint.hpp"

namespace usp::ch06 {

namespace {

// How rank 0's write ended, as every rank learns it.
enum Outcome : std::int32_t { written = 0, usage_error = 1, other_error = 2 };

// Sends rank 0's outcome (and its message) to every rank of comm; every rank then throws the
// same exception (UsageError stays one, anything else is an Error) or returns. A broadcast from
// rank 0 completes on the other ranks only after rank 0 has sent it, i.e. after the files are
// written: it is also the barrier that lets every rank read them afterwards.
void share_outcome(Communicator& comm, Outcome outcome, const std::string& message) {
  // [outcome, message bytes]; the message travels packed in i32 words (at least one).
  Tensor head = Tensor::empty({2}, DType::i32);
  head.data<std::int32_t>()[0] = outcome;
  head.data<std::int32_t>()[1] = static_cast<std::int32_t>(message.size());
  comm.broadcast(head, 0);
  const auto got = static_cast<Outcome>(head.data<std::int32_t>()[0]);
  if (got == written) return;
  const auto bytes = static_cast<std::size_t>(head.data<std::int32_t>()[1]);
  Tensor text = Tensor::zeros({std::max<std::int64_t>(1, static_cast<std::int64_t>((bytes + 3) / 4))}, DType::i32);
  if (comm.rank() == 0) std::memcpy(text.raw(), message.data(), bytes);
  comm.broadcast(text, 0);
  const std::string what(static_cast<const char*>(text.raw()), bytes);
  if (got == usage_error) throw UsageError(what);
  throw Error(what);
}

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
  if (opt.master().defined())
    convert_to_float(params.dtype(), params.flat().raw(), opt.master().data<float>(),
                     static_cast<std::size_t>(params.numel()));
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

  Outcome outcome = written;
  std::string message;
  if (world.rank() == 0) {
    try {
      // The whole model, in the trainer's dtype: the gathered values were widened from it, so
      // rounding them back is exact. It lives (tracked as Parameter) until the files are written.
      const ParamStore& shard = trainer.params();
      ParamStore whole(shard.config(), shard.dtype(), Device::cpu(), /*with_grads=*/false);
      whole.flat().copy_from(Tensor::from_floats(full, {whole.numel()}, whole.dtype()));
      save_checkpoint(dir, whole);
    } catch (const std::exception& e) {
      outcome = dynamic_cast<const UsageError*>(&e) ? usage_error : other_error;
      message = "cannot save the checkpoint '" + dir + "': " + e.what();
    }
  }
  share_outcome(*quiet, outcome, message);
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
