// ch02_recomputation: the playbook's "Activation recomputation" on one device.
//
// The same batch, from the same weights, under the three modes:
//   none       every layer keeps what its backward needs (the attention probabilities included)
//   selective  the attention probabilities (b·a·s² per layer) are dropped and recomputed from
//              q and k in backward: the quadratic term goes, at the cost of one q·kᵀ per layer
//   full       each layer keeps only its input and runs its whole forward again in backward
// For each: the activations held between forward and backward (measured, and by the formula
// for our layers), the peak, the FLOPs (model FLOPs for MFU, hardware FLOPs for HFU) and the
// time; the gradients of the three modes are compared bit for bit.
// Writes <out>/summary.json, recompute.csv and recompute_memory.csv (the playbook's
// none/selective/full figure for 1B..405B, from the calculator).
//
//   build/bin/ch02_recomputation [--seq 256] [--mbs 4] [--repeats 3]
//   ./usp run 02
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_summary.hpp"
#include "chapters/02_recomputation/recompute_measurement.hpp"

namespace {

using namespace usp;
using namespace usp::ch02;

double mib(std::int64_t b) { return static_cast<double>(b) / 1048576.0; }

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch02_recomputation", "activation memory and extra compute of none / selective / full recomputation");
  cli.add_common("out/02_recomputation");
  add_training_flags(cli, {"usp-small", 256, 4, 1, 3e-3});
  cli.add_int("repeats", 3, "timed forward+backward runs per mode (the median is reported)", 1, 100);
  if (!rt.parse(cli, argc, argv)) return 0;
  TrainingConfig cfg;
  std::unique_ptr<Dataset> data;
  rt.agree([&] {
    cfg = training_config_from(cli);
    data = open_training_data(cfg);
  });
  rt.require(rt.size() == 1, "chapter 02 runs on one device: launch it without mpirun (or with -np 1)");
  const std::string out = cli.get_string("out");
  const int repeats = static_cast<int>(cli.get_int("repeats"));
  std::cout << "ch02_recomputation: " << cfg.model.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs << ", "
            << dtype_name(cfg.dtype) << "\n\n";

  const Batch batch = data->batch(0, 0, cfg.mbs, cfg.seq);
  std::vector<ModeResult> results;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full})
    results.push_back(measure_mode(cfg, mode, batch, repeats));
  const ModeResult& none = results[0];

  std::printf("  %-10s %14s %8s %14s %14s %12s %10s %10s %9s\n", "mode", "held after fwd", "vs none",
              "layer keeps", "formula", "peak act.", "GFLOP mdl", "HFU/MFU", "time s");
  make_dirs(out);
  std::ofstream csv(out + "/recompute.csv");
  csv << "mode,held_after_forward,layer_kept,layer_formula,peak_activation,peak_total,model_flops,hardware_flops,"
         "recompute_flops,seconds,gradient_differences\n";
  JsonWriter j;
  j.begin_object().key("modes").begin_array();
  bool ok = true;
  for (const ModeResult& r : results) {
    const std::int64_t differ = count_differences(r.gradients, none.gradients);
    ok = ok && differ == 0 && r.layer_kept == r.layer_formula;
    std::printf("  %-10s %10.2f MiB %7.3fx %10.2f MiB %10.2f MiB %8.2f MiB %10.3f %10.3f %9.3f%s\n",
                recompute_name(r.mode), mib(r.held_after_forward),
                static_cast<double>(r.held_after_forward) / static_cast<double>(none.held_after_forward),
                mib(r.layer_kept), mib(r.layer_formula), mib(r.peak_activation),
                static_cast<double>(r.flops.model()) * 1e-9,
                static_cast<double>(r.flops.hardware()) / static_cast<double>(r.flops.model()), r.seconds,
                differ == 0 ? "" : "  GRADIENTS DIFFER");
    csv << recompute_name(r.mode) << ',' << r.held_after_forward << ',' << r.layer_kept << ',' << r.layer_formula << ','
        << r.peak_activation << ',' << r.peak_total << ',' << r.flops.model() << ',' << r.flops.hardware() << ','
        << r.flops.recompute << ',' << r.seconds << ',' << differ << '\n';
    j.begin_object();
    j.field("mode", recompute_name(r.mode)).field("held_after_forward", r.held_after_forward);
    j.field("layer_kept", r.layer_kept).field("layer_formula", r.layer_formula);
    j.field("peak_activation", r.peak_activation).field("model_flops", r.flops.model());
    j.field("hardware_flops", r.flops.hardware()).field("seconds", r.seconds);
    j.field("gradient_differences", differ);
    j.end_object();
  }
  j.end_array().field("gradients_identical_and_formula_exact", ok).end_object();
  std::cout << "\n  gradients of selective and full equal none's bit for bit: "
            << (count_differences(results[1].gradients, none.gradients) == 0 &&
                        count_differences(results[2].gradients, none.gradients) == 0
                    ? "yes"
                    : "NO")
            << "\n";

  calc::write_sweep_csv(out + "/recompute_memory.csv", calc::run_sweep(calc::figure_recompute()));
  TrainingSummary summary;
  summary.chapter = "02_recomputation";
  summary.losses = {none.loss};
  summary.tokens_per_second = static_cast<double>(cfg.tokens_per_micro_batch()) / none.seconds;
  summary.flags_json = cli.values_json();
  summary.chapter_json = j.str();
  write_training_summary(rt.world(), out + "/summary.json", summary);
  std::cout << "wrote " << out << "/summary.json, recompute.csv, recompute_memory.csv\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
