#include "common/train/training_flags.hpp"

#include "common/checked_math.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/number_text.hpp"

namespace usp {

void add_training_flags(Cli& cli, const TrainingDefaults& d) {
  std::string names;
  for (const auto& n : ModelConfig::builtin_names()) names += (names.empty() ? "" : ", ") + n;
  cli.add_string("model", d.model, "model shape: " + names);
  cli.add_int("layers", d.layers, "override the model's number of layers (0: keep)", 0, 1 << 16);
  cli.add_int("hidden", 0, "override the hidden size (0: keep)", 0, 1 << 20);
  cli.add_int("heads", 0, "override the number of attention heads (0: keep)", 0, 1 << 14);
  cli.add_int("kv-heads", 0, "override the number of key/value heads (0: keep)", 0, 1 << 14);
  cli.add_int("ffn", 0, "override the MLP intermediate size (0: keep)", 0, 1 << 22);
  cli.add_flag("tied", "tie the LM head to the token embedding");
  cli.add_int("seq", d.seq, "sequence length (tokens per sample)", 1, 1 << 20);
  cli.add_int("mbs", d.mbs, "micro-batch size (samples per forward/backward)", 1, 1 << 20);
  cli.add_string("data", "synthetic", "training data: synthetic (Markov corpus with a known entropy floor) or text:FILE (bytes)");
  cli.add_choice("precision", "fp32", {"fp32", "bf16"},
                 "parameters, gradients and activations in fp32, or bf16 with fp32 master weights");
  cli.add_choice("recompute", "none", d.recompute_modes, "activation recomputation");
  cli.add_float("lr", d.lr, "AdamW learning rate", 1e-12, 10.0);
  cli.add_float("weight-decay", 0.1, "AdamW decoupled weight decay", 0.0, 10.0);
  cli.add_steps(d.steps);
}

Cli training_cli(const std::string& program, const TrainingDefaults& defaults, const std::string& summary) {
  USP_CHECK(program.rfind("ch", 0) == 0,
            "training_cli: a chapter's program is named chNN_name, got " + program);
  Cli cli(program, summary);
  cli.add_common("out/" + program.substr(2));
  add_training_flags(cli, defaults);
  return cli;
}

void add_moe_flags(Cli& cli, const MoeDefaults& d) {
  cli.add_int("experts", d.experts, "experts per layer (a Mixtral-style MLP; 0: the dense MLP)", 0,
              ModelConfig::kMaxExperts);
  cli.add_int("top-k", d.top_k, "experts each token goes to", 1, ModelConfig::kMaxExperts);
  cli.add_float("capacity-factor", 0.0,
                "each expert takes at most ceil(factor · tokens · k / E) assignments, the rest dropped (> 0; "
                "default: dropless)");
  cli.add_flag("dropless", "no capacity: every assignment is computed (the default)");
  cli.add_float("aux-coef", d.aux_coef, "coefficient of the load-balancing loss E · Σ f_i · P_i", 0.0, 1e3);
}

void require_cpu_training(const Cli& cli) {
  const std::string& device = cli.get_string("device");
  if (device != "auto" && parse_device(device) != Device::cpu())
    throw UsageError("--device " + device +
                     ": this chapter trains on CPU ranks only (its parallel layout has no device path yet); "
                     "use --device cpu or leave it at auto");
  const std::string& backend = cli.get_string("backend");
  if (backend != "auto" && backend != "mpi")
    throw UsageError("--backend " + backend +
                     " serves CUDA tensors, but the training chapters run on CPU ranks: use --backend mpi or "
                     "leave it at auto");
}

std::int64_t resolve_grad_acc(const Cli& cli, std::int64_t mbs, std::int64_t dp) {
  const std::int64_t grad_acc = cli.get_int("grad-acc"), gbs = cli.get_int("global-batch");
  if (gbs <= 0) return grad_acc;
  const std::int64_t per_step = checked_mul(mbs, dp);
  const std::string per_step_text =
      "mbs × dp = " + std::to_string(mbs) + " × " + std::to_string(dp) + " = " + std::to_string(per_step);
  if (gbs % per_step != 0)
    throw UsageError("--global-batch " + std::to_string(gbs) + " is not a multiple of " + per_step_text +
                     " (global batch = mbs × grad-acc × dp)");
  if (cli.given("grad-acc") && gbs != checked_mul(per_step, grad_acc))
    throw UsageError("--global-batch " + std::to_string(gbs) + " does not equal mbs × grad-acc × dp = " +
                     std::to_string(mbs) + " × " + std::to_string(grad_acc) + " × " + std::to_string(dp) + " = " +
                     std::to_string(checked_mul(per_step, grad_acc)) + " (give one of the two)");
  return gbs / per_step;
}

TrainingConfig training_config_from(const Cli& cli, TrainingDevices devices, int local_rank) {
  TrainingConfig s;
  if (devices == TrainingDevices::cpu_only) {
    require_cpu_training(cli);
  } else {
    s.device = parse_device(cli.get_string("device"), local_rank);
    const std::string& backend = cli.get_string("backend");
    if (devices == TrainingDevices::cpu_or_cuda && backend != "auto")
      throw UsageError("--backend " + backend +
                       ": this chapter runs one rank and no collective on tensors; leave --backend at auto");
    s.backend = parse_comm_backend(backend);
    const bool cuda_backend = s.backend == CommBackend::nccl || s.backend == CommBackend::host_staged;
    if (s.device == Device::cpu() && cuda_backend)
      throw UsageError("--backend " + backend + " serves CUDA tensors; with --device " + s.device.str() +
                       " use mpi or auto");
    if (s.device.is_emulated() && s.backend != CommBackend::automatic)
      throw UsageError("--backend " + backend + ": the emulated device (--device " + s.device.str() +
                       ") always talks host-staged; leave --backend at auto");
    if (s.device.is_cuda() && s.backend == CommBackend::mpi)
      throw UsageError("--backend mpi serves CPU tensors; with --device " + s.device.str() +
                       " use nccl, host-staged or auto");
  }
  s.model = ModelConfig::builtin(cli.get_string("model"));
  auto override_dim = [&](const char* flag, std::int64_t& field) {
    if (cli.get_int(flag) > 0) {
      field = cli.get_int(flag);
      s.model.name = "custom";
    }
  };
  override_dim("layers", s.model.layers);
  override_dim("hidden", s.model.hidden);
  override_dim("heads", s.model.heads);
  override_dim("kv-heads", s.model.kv_heads);
  override_dim("ffn", s.model.ffn);
  if (cli.get_flag("tied")) s.model.tied_embeddings = true;
  if (cli.declared("experts")) {
    s.model.experts = cli.get_int("experts");
    if (s.model.experts == 0)
      for (const char* flag : {"top-k", "capacity-factor", "dropless", "aux-coef"})
        if (cli.given(flag))
          throw UsageError(std::string("--") + flag + " shapes a mixture of experts: give --experts E > 0 with it "
                           "(the dense MLP has no router)");
    s.model.experts_per_token = cli.get_int("top-k");
    s.model.router_aux_loss_coef = cli.get_float("aux-coef");
    if (cli.given("capacity-factor")) {
      if (cli.get_flag("dropless")) throw UsageError("--capacity-factor and --dropless contradict each other: give one");
      if (!(cli.get_float("capacity-factor") > 0))
        throw UsageError("--capacity-factor must be > 0 (each expert's share of the assignments it may take; "
                         "--dropless for no capacity), got " + format_double(cli.get_float("capacity-factor")));
      s.model.capacity_factor = cli.get_float("capacity-factor");
      if (s.model.capacity_factor > static_cast<double>(s.model.experts))
        throw UsageError("--capacity-factor " + format_double(s.model.capacity_factor) + " exceeds the " +
                         std::to_string(s.model.experts) + " experts (--experts): at a factor of " +
                         std::to_string(s.model.experts) +
                         " each expert may already take every assignment (--dropless for no capacity)");
    }
    if (s.model.experts > 0) s.model.name = s.model.name + "-moe";
    if (s.model.experts > 0 && s.model.experts_per_token > s.model.experts)
      throw UsageError("--top-k " + std::to_string(s.model.experts_per_token) + " exceeds the " +
                       std::to_string(s.model.experts) + " experts (--experts)");
  }
  s.model.validate();
  s.seq = cli.get_int("seq");
  s.mbs = cli.get_int("mbs");
  if (s.seq > s.model.max_seq)
    throw UsageError("--seq " + std::to_string(s.seq) + " exceeds the model's max_seq " + std::to_string(s.model.max_seq));
  s.data = cli.get_string("data");
  s.dtype = cli.get_string("precision") == "bf16" ? DType::bf16 : DType::f32;
  s.recompute = parse_recompute(cli.get_string("recompute"));
  s.adamw.lr = cli.get_float("lr");
  s.adamw.weight_decay = cli.get_float("weight-decay");
  s.seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  s.steps = cli.get_int("steps");
  return s;
}

std::unique_ptr<Dataset> open_training_data(const TrainingConfig& cfg) {
  std::unique_ptr<Dataset> data = make_dataset(cfg.data, cfg.seed);
  if (data->vocab() > cfg.model.vocab)
    throw UsageError("--data " + cfg.data + " has " + std::to_string(data->vocab()) + " token ids but the model's vocabulary is " +
                     std::to_string(cfg.model.vocab));
  data->check_seq(cfg.seq);
  return data;
}

calc::TrainingSetup calc_setup(const TrainingConfig& cfg) {
  calc::TrainingSetup s;
  s.model = cfg.model;
  s.seq = cfg.seq;
  s.mbs = cfg.mbs;
  s.precision = cfg.dtype == DType::f32 ? calc::Precision::fp32 : calc::Precision::mixed;
  s.recompute = cfg.recompute;
  return s;
}

}  // namespace usp
