#include "chapters/04_data_parallel/dp_trainer.hpp"

#include <chrono>

#include "common/device.hpp"
#include "common/trace.hpp"
#include "common/model/unit_spans.hpp"
#include "common/report/row_gather.hpp"

namespace usp::ch04 {

DataParallelTrainer::DataParallelTrainer(const DpConfig& cfg, Communicator& comm) : cfg_(cfg), comm_(comm) {
  params_ = std::make_unique<ParamStore>(cfg.train.model, cfg.train.dtype, cfg.train.device);
  // Every rank the same weights (docs/ARCHITECTURE.md, principle 1): no broadcast needed.
  params_->init(cfg.train.seed);
  model_ = std::make_unique<Model>(*params_, cfg.train.model_options());
  optimizer_ = std::make_unique<AdamW>(*params_, cfg.train.adamw);
  BucketPlan plan;
  if (cfg.mode == DpMode::bucketing) plan = bucket_plan(params_->infos(), cfg.bucket_cap_bytes, params_->dtype());
  sync_ = std::make_unique<GradientSync>(cfg.mode, comm, whole_model(*params_), std::move(plan));
  ModelHooks hooks;
  trace_units(hooks, static_cast<int>(cfg.train.model.layers));
  sync_->attach(hooks);
  model_->set_hooks(std::move(hooks));
}

DpStepStats DataParallelTrainer::step(const Dataset& data, std::int64_t step) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t k = cfg_.grad_acc, b = cfg_.train.mbs, first = comm_.rank() * k * b;
  auto all_reduces = [&] { return static_cast<std::int64_t>(comm_.stats().count(CommOp::all_reduce)); };
  const auto bytes0 = comm_.stats().sent(CommOp::all_reduce);
  DpStepStats st;
  params_->zero_grad();
  for (std::int64_t j = 0; j < k; ++j) {
    const Batch mb = data.batch(step, first + j * b, b, cfg_.train.seq);
    const std::int64_t c0 = all_reduces();
    st.loss += model_->forward(mb.inputs, mb.targets);
    sync_->begin_backward(/*final_micro_batch=*/j == k - 1);
    model_->backward(1.0f / static_cast<float>(k));
    st.collectives_during.push_back(all_reduces() - c0);
  }
  const std::int64_t c0 = all_reduces();
  sync_->finish();
  st.collectives_after = all_reduces() - c0;
  {
    TraceScope span("optimizer");
    optimizer_->step(*params_);
  }
  synchronize(cfg_.train.device);  // a GPU's queued work belongs to this step's time
  st.loss /= static_cast<double>(k);
  st.bytes_sent = static_cast<std::int64_t>(comm_.stats().sent(CommOp::all_reduce) - bytes0);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

std::vector<double> mean_over_ranks(Communicator& comm, const std::vector<double>& mine) {
  const std::vector<std::vector<double>> all = report::gather_row_lists(comm, mine);
  std::vector<double> mean(mine.size(), 0.0);
  for (const auto& rank : all)
    for (std::size_t i = 0; i < mine.size(); ++i) mean[i] += rank[i];
  for (double& v : mean) v /= static_cast<double>(comm.size());
  return mean;
}

}  // namespace usp::ch04
