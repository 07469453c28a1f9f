// usp_calc: the analytic calculator. Per-rank memory (parameters, gradients, optimizer states,
// activations) and FLOPs per step of a training configuration, from the playbook's formulas
// (common/calc/memory_model.hpp states every convention).
//
//   usp_calc --model llama3.1-8b --seq 4096 --mbs 1 --precision mixed --recompute none
//   usp_calc --model llama3.1-70b --tp 8 --sp --pp 4 --dp 8 --zero 1 --json
//   usp_calc --layers 16 --hidden 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --tied
//   usp_calc --list-models
//   usp_calc --model llama3.1-8b --recipes   (the playbook's bytes per parameter of each precision recipe)
//   usp_calc --sweep memory_vs_seq --csv out/01_memory/memory_vs_seq.csv   (a plot's data)
//
// A bad flag or an impossible configuration prints "error: <message>" and exits 2.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/calc/flops_model.hpp"
#include "common/calc/memory_model.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/calc/precision_recipes.hpp"
#include "common/calc/training_setup.hpp"
#include "common/checked_math.hpp"
#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/tool_main.hpp"

namespace {

using namespace usp;
using namespace usp::calc;

const char* const kShapeFlags[] = {"layers", "hidden", "heads", "kv-heads", "ffn", "vocab"};

Cli make_cli() {
  Cli cli("usp_calc",
          "Per-rank memory and FLOPs of a training step from the playbook's formulas. Give a built-in\n"
          "model (--model, see --list-models) or a shape (--layers --hidden --heads [--kv-heads] --ffn\n"
          "--vocab [--tied]); without either, llama3.1-8b.");
  cli.add_string("model", "", "built-in model name (default llama3.1-8b when no shape is given)");
  cli.add_flag("list-models", "print the built-in models and exit (with --json: one JSON array)");
  cli.add_flag("recipes",
               "print the training-state bytes per parameter of the playbook's precision recipes (bf16 mixed "
               "precision, Transformer Engine, FP8-LM, DeepSeek-V3, nanotron FP8) and the model's total under each");
  cli.add_int("layers", 0, "shape: decoder layers L", 1);
  cli.add_int("hidden", 0, "shape: hidden size h", 1);
  cli.add_int("heads", 0, "shape: attention heads a", 1);
  cli.add_int("kv-heads", 0, "shape: kv heads g (default: --heads)", 1);
  cli.add_int("ffn", 0, "shape: SwiGLU intermediate size f", 1);
  cli.add_int("vocab", 0, "shape: vocabulary size v", 1);
  cli.add_flag("tied", "shape: the LM head reuses the embedding");
  cli.add_int("seq", 4096, "sequence length s", 1);
  cli.add_int("mbs", 1, "micro-batch size b (sequences per rank per micro-batch)", 1);
  cli.add_choice("precision", "mixed", {"fp32", "mixed"}, "number format");
  cli.add_choice("recompute", "none", {"none", "selective", "full"}, "activation recomputation");
  cli.add_flag("fp32-grad-accum", "mixed precision: keep an fp32 gradient accumulation buffer (+4N)");
  cli.add_int("dp", 1, "data-parallel degree N_d", 1);
  cli.add_int("zero", 0, "ZeRO stage over the dp ranks", 0, 3);
  cli.add_int("tp", 1, "tensor-parallel degree t", 1);
  cli.add_flag("sp", "sequence parallelism with TP");
  cli.add_int("cp", 1, "context-parallel degree c", 1);
  cli.add_int("pp", 1, "pipeline-parallel degree p (reported: the first stage, 1F1B)", 1);
  cli.add_int("ep", 1, "expert-parallel degree: a mixture of experts' experts spread over ep of the dp·cp ranks "
              "(dense models: 1)", 1);
  cli.add_flag("json", "print one JSON object instead of the table");
  cli.add_string("sweep", "", "write a figure's sweep as CSV instead: memory_vs_seq | recompute | zero | tp | cp");
  cli.add_string("csv", "", "with --sweep: the CSV file to write (default: standard output)");
  return cli;
}

ModelConfig model_from_cli(const Cli& cli) {
  bool any_shape = cli.given("tied");
  for (const char* f : kShapeFlags) any_shape = any_shape || cli.given(f);
  if (!any_shape) return ModelConfig::builtin(cli.given("model") ? cli.get_string("model") : "llama3.1-8b");
  if (cli.given("model"))
    throw UsageError("give either --model or the shape flags (--layers --hidden --heads --ffn --vocab), not both");
  for (const char* f : kShapeFlags)
    if (std::string(f) != "kv-heads" && !cli.given(f))
      throw UsageError(std::string("--") + f + " is required when the model is given by its shape");
  ModelConfig c;
  c.name = "custom";
  c.layers = cli.get_int("layers");
  c.hidden = cli.get_int("hidden");
  c.heads = cli.get_int("heads");
  c.kv_heads = cli.given("kv-heads") ? cli.get_int("kv-heads") : c.heads;
  c.ffn = cli.get_int("ffn");
  c.vocab = cli.get_int("vocab");
  c.tied_embeddings = cli.get_flag("tied");
  return c;
}

TrainingSetup setup_from_cli(const Cli& cli) {
  TrainingSetup s;
  s.model = model_from_cli(cli);
  s.seq = cli.get_int("seq");
  s.mbs = cli.get_int("mbs");
  s.precision = parse_precision(cli.get_string("precision"));
  s.recompute = parse_recompute(cli.get_string("recompute"));
  s.fp32_grad_accum = cli.get_flag("fp32-grad-accum");
  s.dp = cli.get_int("dp");
  s.zero = static_cast<int>(cli.get_int("zero"));
  s.tp = cli.get_int("tp");
  s.sp = cli.get_flag("sp");
  if (s.sp && s.tp == 1)
    throw UsageError("--sp needs --tp > 1: sequence parallelism splits the norms' and dropouts' activations over the "
                     "tensor-parallel group");
  s.cp = cli.get_int("cp");
  s.pp = cli.get_int("pp");
  s.ep = cli.get_int("ep");
  s.validate();
  return s;
}

// How --pp splits the layers: the first L mod p stages take one layer more (ceil(L/p)), the rest
// floor(L/p). "32 layers over 7 stages: 4 × 5 + 3 × 4" ("8 layers over 4 stages: 4 × 2").
std::string pp_split(const TrainingSetup& s) {
  const std::int64_t L = s.model.layers, p = s.pp, big = L % p, small = p - big;
  std::string text = std::to_string(L) + " layers over " + std::to_string(p) + " stages: ";
  if (big > 0) text += std::to_string(big) + " × " + std::to_string(L / p + 1) + (small > 0 ? " + " : "");
  if (small > 0) text += std::to_string(small) + " × " + std::to_string(L / p);
  return text;
}

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ll << 30); }

// The exact count of this course's layer on this rank, with the setup's tp / sp; none (the
// field and the line are left out, not an error) when the course's model could not split the
// layer that way: with CP (not modelled by the course count), or when t does not divide the kv
// heads (the calculator replicates them, chapter 06's model does not). The divisibility rules
// live in course_layer_activation_bytes alone: its UsageError is the answer "does not apply".
std::optional<std::int64_t> course_count(const TrainingSetup& s) {
  if (s.cp != 1) return std::nullopt;
  try {
    return course_layer_activation_bytes(s.model, s.seq, s.mbs, s.recompute, s.activation_element_bytes(), s.tp, s.sp);
  } catch (const OverflowError&) {
    throw;  // a count too large is an error, not "does not apply"
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

void print_json(const TrainingSetup& s, const MemoryBreakdown& m, const FlopsEstimate& f) {
  const ModelConfig& c = s.model;
  JsonWriter j;
  j.begin_object();
  j.field("model", c.name).field("layers", c.layers).field("hidden", c.hidden).field("heads", c.heads);
  j.field("kv_heads", c.kv_heads).field("ffn", c.ffn).field("vocab", c.vocab).field("tied", c.tied_embeddings);
  j.field("seq", s.seq).field("mbs", s.mbs).field("precision", precision_name(s.precision));
  j.field("recompute", recompute_name(s.recompute)).field("fp32_grad_accum", s.fp32_grad_accum);
  j.field("dp", s.dp).field("zero", s.zero).field("tp", s.tp).field("sp", s.sp).field("cp", s.cp);
  j.field("pp", s.pp).field("ep", s.ep);
  if (s.pp > 1) j.field("pp_layer_split", pp_split(s));
  j.field("num_parameters", c.num_parameters());
  j.field("num_parameters_playbook_formula", playbook_num_parameters(c));
  if (c.is_moe()) {
    j.field("experts", c.experts).field("experts_per_token", c.experts_per_token);
    j.field("active_parameters", c.active_parameters());
    j.field("expert_parameters_per_rank", expert_parameters_per_rank(s));
  }
  j.field("parameters_per_rank", parameters_per_rank(s));
  j.field("parameters_bytes", m.parameters).field("gradients_bytes", m.gradients);
  j.field("optimizer_bytes", m.optimizer).field("master_weights_bytes", m.master_weights);
  j.field("activations_bytes", m.activations).field("total_bytes", m.total());
  j.field("activation_bytes_per_layer", playbook_layer_activation_bytes(s));
  j.field("layers_on_rank", layers_on_first_stage(s)).field("microbatches_in_flight", microbatches_in_flight(s));
  if (const auto layer = course_count(s)) j.field("course_layer_activation_bytes", *layer);
  j.field("tokens_per_step", f.tokens).field("flops_per_step", f.model);
  j.field("recompute_flops_per_step", f.recompute).field("hardware_flops_per_step", f.hardware());
  j.end_object();
  std::cout << j.str() << '\n';
}

void print_row(const char* name, std::int64_t bytes, const std::string& note) {
  std::printf("  %-13s %18lld %10.2f   %s\n", name, static_cast<long long>(bytes), gib(bytes), note.c_str());
}

void print_table(const TrainingSetup& s, const MemoryBreakdown& m, const FlopsEstimate& f) {
  const ModelConfig& c = s.model;
  const StateBytes per = state_bytes_per_parameter(s.precision, s.fp32_grad_accum);
  const bool mixed = s.precision == Precision::mixed;
  auto zero_note = [&](int from_stage, const std::string& what) {
    return what + (s.zero >= from_stage && s.dp > 1 ? ", sharded over dp " + std::to_string(s.dp) : "");
  };
  std::printf("model       %s\n", c.str().c_str());
  std::printf("setup       seq %lld, mbs %lld, precision %s, recompute %s%s\n", static_cast<long long>(s.seq),
              static_cast<long long>(s.mbs), precision_name(s.precision), recompute_name(s.recompute),
              s.fp32_grad_accum ? ", fp32 gradient accumulation" : "");
  std::printf("layout      dp %lld (ZeRO-%d), tp %lld, sp %s, cp %lld, pp %lld, ep %lld\n",
              static_cast<long long>(s.dp), s.zero, static_cast<long long>(s.tp), s.sp ? "on" : "off",
              static_cast<long long>(s.cp), static_cast<long long>(s.pp), static_cast<long long>(s.ep));
  std::printf("parameters  N = %lld (exact for this architecture); playbook formula h·v + L·(12h² + 13h) + 2h = %lld\n",
              static_cast<long long>(c.num_parameters()), static_cast<long long>(playbook_num_parameters(c)));
  if (c.is_moe())
    std::printf("experts     %lld per layer, top-%lld: %lld parameters active per token (%.1f%% of N)\n",
                static_cast<long long>(c.experts), static_cast<long long>(c.experts_per_token),
                static_cast<long long>(c.active_parameters()),
                100.0 * static_cast<double>(c.active_parameters()) / static_cast<double>(c.num_parameters()));
  std::printf("            on this rank (after TP/PP/EP, before ZeRO): %lld\n", static_cast<long long>(parameters_per_rank(s)));
  if (c.is_moe())
    std::printf("            of which experts: %lld (%lld of %lld per layer; ZeRO shards them over dp·cp/ep = %lld)\n",
                static_cast<long long>(expert_parameters_per_rank(s)), static_cast<long long>(c.experts / s.ep),
                static_cast<long long>(c.experts), static_cast<long long>(s.dp * s.cp / s.ep));
  if (s.pp > 1)
    std::printf("pipeline    %s; the numbers are for the first stage (%lld layers)\n", pp_split(s).c_str(),
                static_cast<long long>(layers_on_first_stage(s)));
  std::printf("\n");

  std::printf("  %-13s %18s %10s\n", "per rank", "bytes", "GiB");
  print_row("parameters", m.parameters,
            zero_note(3, std::string(mixed ? "bf16" : "fp32") + ", " + std::to_string(per.parameters) + " B/param"));
  print_row("gradients", m.gradients,
            zero_note(2, std::string(mixed ? (s.fp32_grad_accum ? "bf16 + fp32 accumulation" : "bf16") : "fp32") + ", " +
                             std::to_string(per.gradients) + " B/param"));
  print_row("optimizer", m.optimizer,
            zero_note(1, std::string(mixed ? "fp32 master 4 + Adam m, v 8" : "Adam m, v 8") + " B/param"));
  print_row("activations", m.activations,
            std::to_string(layers_on_first_stage(s)) + " layers x " + std::to_string(microbatches_in_flight(s)) +
                " micro-batch(es) x " + std::to_string(playbook_layer_activation_bytes(s)) + " B (" +
                (mixed ? "16-bit" : "fp32: 4-byte elements, twice the 16-bit formula") + ")");
  print_row("total", m.total(), "");

  std::printf("\nactivations: the playbook's per-layer formula (GPT layer: MHA, 4h MLP, dropout masks); the\n"
              "  embedding output, final norm, logits and loss are not included.%s\n",
              s.pp > 1 ? " PP: the first stage, p micro-batches in flight (1F1B)." : "");
  if (const auto course = course_count(s)) {
    const std::int64_t layer = *course;
    const std::int64_t layers = layers_on_first_stage(s), in_flight = microbatches_in_flight(s);
    const char* split = s.tp == 1 ? "" : s.sp ? " per rank with chapter 06's TP + SP split"
                                              : " per rank with chapter 06's TP split";
    std::printf("  this course's decoder layer keeps exactly %lld B%s "
                "(%.2f GiB for %lld layer(s) x %lld micro-batch(es)).\n",
                static_cast<long long>(layer), split, gib((Count(layer) * layers * in_flight).value()),
                static_cast<long long>(layers), static_cast<long long>(in_flight));
  }
  std::printf("\nFLOPs per step (%lld tokens = mbs x seq x dp; 6N + 12·L·h·s per token):\n",
              static_cast<long long>(f.tokens));
  std::printf("  model (MFU)     %.6g\n  recompute       %.6g\n  hardware (HFU)  %.6g\n", f.model, f.recompute,
              f.hardware());
}

void list_models(bool json) {
  JsonWriter j;
  j.begin_array();
  for (const std::string& name : ModelConfig::builtin_names()) {
    const ModelConfig c = ModelConfig::builtin(name);
    if (!json) {
      std::printf("%-52s N = %lld\n", c.str().c_str(), static_cast<long long>(c.num_parameters()));
      continue;
    }
    j.begin_object().field("model", c.name).field("layers", c.layers).field("hidden", c.hidden);
    j.field("heads", c.heads).field("kv_heads", c.kv_heads).field("ffn", c.ffn).field("vocab", c.vocab);
    j.field("tied", c.tied_embeddings).field("max_seq", c.max_seq).field("num_parameters", c.num_parameters());
    j.end_object();
  }
  j.end_array();
  if (json) std::cout << j.str() << '\n';
}

// --recipes: each recipe's format per copy, its bytes per parameter and the model's states under it.
void print_recipes(const ModelConfig& c, bool json) {
  const std::int64_t n = c.num_parameters();
  const auto shown = [](const std::string& f) { return f.empty() ? std::string("-") : f; };
  JsonWriter j;
  j.begin_object().field("model", c.name).field("num_parameters", n).key("recipes").begin_array();
  if (!json) {
    std::printf("%s, N = %lld: training state per parameter (activations excluded, no ZeRO)\n", c.str().c_str(),
                static_cast<long long>(n));
    std::printf("%-40s %-5s %-6s %-6s %-7s %-6s %-12s %5s %10s\n", "recipe", "GEMM", "master", "accum", "weights",
                "grads", "Adam m + v", "bytes", "GiB");
  }
  for (const PrecisionRecipe& r : playbook_precision_recipes()) {
    const std::int64_t bytes = checked_mul(n, static_cast<std::int64_t>(r.total_bytes()));
    if (!json)
      std::printf("%-40s %-5s %-6s %-6s %-7s %-6s %-12s %5d %10.1f\n", r.name.c_str(), r.gemm.c_str(),
                  shown(r.master_weights).c_str(), shown(r.accumulated_gradients).c_str(), r.weights.c_str(),
                  r.gradients.c_str(), (r.adam_first + " + " + r.adam_second).c_str(), r.total_bytes(), gib(bytes));
    j.begin_object().field("recipe", r.name).field("gemm", r.gemm).field("master_weights", r.master_weights);
    j.field("accumulated_gradients", r.accumulated_gradients).field("weights", r.weights).field("gradients", r.gradients);
    j.field("adam_first", r.adam_first).field("adam_second", r.adam_second);
    j.field("bytes_per_parameter", r.total_bytes()).field("total_bytes", bytes).end_object();
  }
  j.end_array().end_object();
  if (json) std::cout << j.str() << '\n';
}

int calc_main(int argc, char** argv) {
  Cli cli = make_cli();
  if (!parse_tool_flags(cli, argc, argv)) return 0;
  // The flags that shape one configuration: --list-models and --recipes would ignore some of them.
  const std::vector<const char*> setup_flags = {"seq", "mbs", "precision", "recompute", "fp32-grad-accum", "dp",
                                                "zero", "tp", "sp", "cp", "pp", "ep"};
  const std::vector<const char*> model_flags = {"model", "layers", "hidden", "heads", "kv-heads", "ffn", "vocab", "tied"};
  if (cli.get_flag("list-models")) {
    for (const auto* flags : {&model_flags, &setup_flags})
      for (const char* flag : *flags)
        if (cli.given(flag))
          throw UsageError(std::string("--") + flag + " does not go with --list-models: it prints the built-in "
                           "models and exits (only --json changes it)");
    for (const char* flag : {"recipes", "sweep", "csv"})
      if (cli.given(flag)) throw UsageError(std::string("--") + flag + " does not go with --list-models: give one");
    list_models(cli.get_flag("json"));
    return 0;
  }
  if (cli.given("sweep")) {
    // A figure's sweep fixes its own models, sequences and layouts: a flag that would shape the
    // configuration is refused, never silently ignored.
    for (const char* flag : {"model", "layers", "hidden", "heads", "kv-heads", "ffn", "vocab", "tied", "seq", "mbs",
                             "precision", "recompute", "fp32-grad-accum", "dp", "zero", "tp", "sp", "cp", "pp", "ep",
                             "json", "recipes"})
      if (cli.given(flag))
        throw UsageError(std::string("--") + flag + " does not go with --sweep " + cli.get_string("sweep") +
                         ": a figure's sweep fixes its own models and layouts (leave --" + flag +
                         " out, or drop --sweep for one configuration)");
    const std::vector<SweepRow> rows = run_sweep(figure_by_name(cli.get_string("sweep")));
    if (cli.given("csv")) {
      write_sweep_csv(cli.get_string("csv"), rows);
      std::cerr << "wrote " << cli.get_string("csv") << '\n';
    } else {
      std::cout << sweep_csv(rows);
    }
    return 0;
  }
  if (cli.given("csv")) throw UsageError("--csv only goes with --sweep");
  const TrainingSetup setup = setup_from_cli(cli);
  if (cli.get_flag("recipes")) {
    // The recipes' bytes per parameter depend on the model only.
    for (const char* flag : setup_flags)
      if (cli.given(flag))
        throw UsageError(std::string("--") + flag + " does not go with --recipes: it compares every precision "
                         "recipe's training state for the model alone (--model or its shape; drop --recipes for "
                         "one configuration)");
    print_recipes(setup.model, cli.get_flag("json"));
    return 0;
  }
  try {
    const MemoryBreakdown memory = memory_per_rank(setup);
    const FlopsEstimate flops = flops_per_step(setup);
    if (cli.get_flag("json")) print_json(setup, memory, flops);
    else print_table(setup, memory, flops);
  } catch (const OverflowError& e) {
    throw UsageError(std::string("this configuration's counts do not fit in 64-bit integers (") + e.what() +
                     "); use a smaller --seq, --mbs or model");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run_tool(argc, argv, calc_main); }
