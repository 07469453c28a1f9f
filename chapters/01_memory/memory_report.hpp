// Chapter 01's comparisons: what the tracker measured against what the counts say, printed as
// the lesson's tables and written as breakdown.csv / summary.json results.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/model/model.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch01 {

// One decoder layer's saved bytes, three ways (first forward, layer 0).
struct LayerMeasurement {
  std::int64_t exercise = 0;  // layer_activation_bytes (exercise 01.1) in the model's recompute mode
  std::int64_t declared = 0;  // the sum of the tensors the layer keeps (Model::saved_bytes)
  std::int64_t measured = 0;  // the tracker's Activation growth while it ran
  std::int64_t exercise_head = 0;  // head_activation_bytes (exercise 01.1)
  std::int64_t head_declared = 0;
  std::int64_t all_declared = 0;  // every unit, = the activations held at the end of forward
};
LayerMeasurement measure_layer(const Model& model, const TrainingConfig& cfg);

struct BreakdownRow {
  std::string category;       // "parameter", ...
  std::int64_t measured = 0;  // tracker peak of the category
  std::int64_t expected = -1; // the count; -1 when there is none (temporaries)
  std::string rule;           // how expected is counted
};
struct Breakdown {
  std::vector<BreakdownRow> rows;
  std::int64_t peak_total = 0;
  bool all_match() const;
};
Breakdown compare_with_counts(const ParamStore& params, const Model& model, const TrainingConfig& cfg,
                              const LayerMeasurement& layer);

void print_breakdown(std::ostream& os, const Breakdown& b, const LayerMeasurement& layer);
// The calculator (playbook formulas) for the same configuration.
void print_calculator_view(std::ostream& os, const TrainingConfig& cfg);
void write_breakdown_csv(const std::string& path, const Breakdown& b);
// With the held-out losses (validation_loss.hpp's "validation": empty without --eval-every).
std::string results_json(const Breakdown& b, const LayerMeasurement& layer, const std::vector<std::int64_t>& val_steps,
                         const std::vector<double>& val_losses);

}  // namespace usp::ch01
