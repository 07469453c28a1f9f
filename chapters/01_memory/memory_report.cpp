#include "chapters/01_memory/memory_report.hpp"

#include <cstdio>

#include "chapters/01_memory/activation_bytes.hpp"
#include "common/calc/memory_model.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch01 {

namespace {
double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }
double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
}  // namespace

LayerMeasurement measure_layer(const Model& model, const TrainingConfig& cfg) {
  LayerMeasurement m;
  // A mixture of experts keeps what its routing decides: no count (the contract refuses it).
  m.exercise = cfg.model.is_moe()
                   ? -1
                   : layer_activation_bytes(cfg.model, cfg.mbs, cfg.seq, cfg.dtype, model.options().recompute);
  m.exercise_head = head_activation_bytes(cfg.model, cfg.mbs, cfg.seq, cfg.dtype);
  m.declared = model.saved_bytes().at(1);
  m.measured = model.measured_saved_bytes().at(1);
  m.head_declared = model.saved_bytes().back();
  for (std::int64_t b : model.saved_bytes()) m.all_declared += b;
  return m;
}

bool Breakdown::all_match() const {
  for (const auto& r : rows)
    if (r.expected >= 0 && r.expected != r.measured) return false;
  return true;
}

Breakdown compare_with_counts(const ParamStore& params, const Model& model, const TrainingConfig& cfg,
                              const LayerMeasurement& layer) {
  const MemoryTracker& tracker = MemoryTracker::instance();
  const MemCounts peak = tracker.peak();
  const std::int64_t N = params.numel(), es = static_cast<std::int64_t>(dtype_size(cfg.dtype));
  const bool narrow = cfg.dtype != DType::f32;
  Breakdown b;
  b.rows.push_back({"parameter", peak[MemCategory::Parameter], N * es,
                    "N·" + std::to_string(es) + " (N = " + std::to_string(N) + ")"});
  b.rows.push_back({"gradient", peak[MemCategory::Gradient], N * es, "N·" + std::to_string(es)});
  b.rows.push_back({"optimizer_state", peak[MemCategory::OptimizerState], N * (narrow ? 12 : 8),
                    narrow ? "N·(4 master + 4 m + 4 v)" : "N·(4 m + 4 v)"});
  // Without recomputation, activations peak at the end of forward: every layer's saved tensors
  // (your count × L) plus the head's (your count too). With recomputation the peak comes during a
  // backward that rebuilds a layer, and for a mixture of experts there is no count: the units'.
  const bool counted = model.options().recompute == Recompute::none && !cfg.model.is_moe();
  b.rows.push_back({"activation", peak[MemCategory::Activation],
                    counted ? cfg.model.layers * layer.exercise + layer.exercise_head : layer.all_declared,
                    counted ? "L·layer_activation_bytes + head_activation_bytes" : "sum of what the units declare"});
  b.rows.push_back({"temporary", peak[MemCategory::Temporary], -1, "scratch, no count"});
  b.rows.push_back({"comm_buffer", peak[MemCategory::CommBuffer], 0, "no communication on one device"});
  b.peak_total = tracker.peak_total();
  return b;
}

void print_breakdown(std::ostream& os, const Breakdown& b, const LayerMeasurement& layer) {
  char line[256];
  os << "\none decoder layer's saved activations (layer 0, first step):\n";
  std::snprintf(line, sizeof line, "  your count (exercise 01.1) %12lld B\n  declared by the layer      %12lld B\n"
                "  measured by the tracker    %12lld B   %s\n",
                static_cast<long long>(layer.exercise), static_cast<long long>(layer.declared),
                static_cast<long long>(layer.measured),
                layer.exercise == layer.measured && layer.declared == layer.measured ? "(all equal)" : "(MISMATCH)");
  os << line;
  os << "\npeak memory by category (tracker) against the count:\n";
  std::snprintf(line, sizeof line, "  %-16s %14s %12s %14s  %s\n", "category", "measured B", "MiB", "count B", "rule");
  os << line;
  for (const auto& r : b.rows) {
    const std::string expected = r.expected < 0 ? "-" : std::to_string(r.expected);
    const char* mark = r.expected < 0 ? "" : (r.expected == r.measured ? " ok" : " MISMATCH");
    std::snprintf(line, sizeof line, "  %-16s %14lld %12.2f %14s  %s%s\n", r.category.c_str(),
                  static_cast<long long>(r.measured), mib(r.measured), expected.c_str(), r.rule.c_str(), mark);
    os << line;
  }
  std::snprintf(line, sizeof line, "  %-16s %14lld %12.2f   (peak of the sum, not the sum of the peaks)\n", "total",
                static_cast<long long>(b.peak_total), mib(b.peak_total));
  os << line;
}

void print_calculator_view(std::ostream& os, const TrainingConfig& cfg) {
  calc::TrainingSetup s = calc_setup(cfg);
  const calc::MemoryBreakdown m = calc::memory_per_rank(s);
  const std::int64_t exact = cfg.model.layers * calc::course_layer_activation_bytes(
                                                    cfg.model, cfg.seq, cfg.mbs, cfg.recompute, s.activation_element_bytes());
  char line[256];
  os << "\nthe calculator (usp_calc) for the same configuration:\n";
  std::snprintf(line, sizeof line,
                "  parameters %.2f MiB, gradients %.2f MiB, optimizer %.2f MiB\n"
                "  activations, playbook formula L·s·b·h·(34 + 5·a·s/h)%s: %.2f MiB\n"
                "  activations, this course's layers (L × exact count):     %.2f MiB\n",
                mib(m.parameters), mib(m.gradients), mib(m.optimizer),
                s.precision == calc::Precision::fp32 ? " ×2 for fp32" : "", mib(m.activations), mib(exact));
  os << line;
  // The playbook's worked number, for scale.
  calc::TrainingSetup big;
  big.model = ModelConfig::builtin("llama3.1-8b");
  std::snprintf(line, sizeof line, "  Llama-3.1 8B, s = 4096, b = 1, bf16, no recompute: activations %.1f GiB\n",
                gib(calc::memory_per_rank(big).activations));
  os << line;
}

void write_breakdown_csv(const std::string& path, const Breakdown& b) {
  report::Table t({{.key = "category"}, {.key = "measured_bytes"}, {.key = "expected_bytes"}});
  for (const auto& r : b.rows) t.add({r.category, r.measured, r.expected});
  t.add({"total", b.peak_total, std::int64_t{-1}});
  t.write_csv(path);
}

std::string results_json(const Breakdown& b, const LayerMeasurement& layer, const std::vector<std::int64_t>& val_steps,
                         const std::vector<double>& val_losses) {
  JsonWriter j;
  j.begin_object();
  j.key("layer_activation_bytes").begin_object();
  j.field("exercise", layer.exercise).field("declared", layer.declared).field("measured", layer.measured);
  j.end_object();
  j.key("breakdown").begin_object();
  for (const auto& r : b.rows) {
    j.key(r.category).begin_object();
    j.field("measured", r.measured).field("expected", r.expected);
    j.end_object();
  }
  j.end_object();
  j.field("peak_total", b.peak_total);
  j.field("all_match", b.all_match());
  write_validation_json(j, val_steps, val_losses);
  j.end_object();
  return j.str();
}

}  // namespace usp::ch01
