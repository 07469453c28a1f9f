#include "common/calc/memory_sweep.hpp"

#include <functional>
#include <sstream>

#include "common/error.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"

namespace usp::calc {

namespace {
const std::vector<std::int64_t> kPlaybookSeqs = {1024, 2048, 4096, 8192, 16384};

// One layout per value: `base` with set(layout, value) applied (the figures that vary one
// dimension of the layout).
std::vector<ParallelLayout> layouts_along(const ParallelLayout& base,
                                          const std::function<void(ParallelLayout&, std::int64_t)>& set,
                                          const std::vector<std::int64_t>& values) {
  std::vector<ParallelLayout> layouts;
  for (std::int64_t v : values) {
    ParallelLayout l = base;
    set(l, v);
    layouts.push_back(l);
  }
  return layouts;
}
}  // namespace

std::vector<SweepRow> run_sweep(const MemorySweep& sweep) {
  std::vector<SweepRow> rows;
  for (const std::string& name : sweep.models) {
    const ModelConfig model = ModelConfig::builtin(name);
    for (std::int64_t seq : sweep.seqs)
      for (Recompute recompute : sweep.recomputes)
        for (Precision precision : sweep.precisions)
          for (const ParallelLayout& layout : sweep.layouts) {
            TrainingSetup s;
            static_cast<ParallelLayout&>(s) = layout;
            s.model = model;
            s.seq = seq;
            s.mbs = sweep.mbs;
            s.recompute = recompute;
            s.precision = precision;
            s.fp32_grad_accum = sweep.fp32_grad_accum && precision == Precision::mixed;
            rows.push_back({s, memory_per_rank(s)});
          }
  }
  return rows;
}

std::string sweep_csv_header() {
  return "model,num_parameters,seq,mbs,recompute,precision,dp,zero,tp,sp,cp,pp,"
         "parameters_bytes,gradients_bytes,optimizer_bytes,activations_bytes,total_bytes";
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  std::ostringstream os;
  os << sweep_csv_header() << '\n';
  for (const SweepRow& r : rows) {
    const TrainingSetup& s = r.setup;
    const MemoryBreakdown& m = r.memory;
    os << s.model.name << ',' << s.model.num_parameters() << ',' << s.seq << ',' << s.mbs << ','
       << recompute_name(s.recompute) << ',' << precision_name(s.precision) << ',' << s.dp << ',' << s.zero << ','
       << s.tp << ',' << (s.sp ? 1 : 0) << ',' << s.cp << ',' << s.pp << ',' << m.parameters << ','
       << m.gradients << ',' << m.optimizer << ',' << m.activations << ',' << m.total() << '\n';
  }
  return os.str();
}

void write_sweep_csv(const std::string& path, const std::vector<SweepRow>& rows) {
  write_file_atomic(path, sweep_csv(rows));
}

MemorySweep figure_memory_vs_seq() {
  MemorySweep s;
  s.models = {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b"};
  s.seqs = kPlaybookSeqs;
  return s;
}

MemorySweep figure_recompute() {
  MemorySweep s;
  s.models = {"llama3.2-1b", "llama3.2-3b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b"};
  s.seqs = kPlaybookSeqs;
  s.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
  return s;
}

MemorySweep figure_zero() {
  MemorySweep s;
  s.models = {"llama3.1-8b"};
  s.seqs = kPlaybookSeqs;
  ParallelLayout dp8;
  dp8.dp = 8;
  s.layouts = layouts_along(dp8, [](ParallelLayout& l, std::int64_t stage) { l.zero = static_cast<int>(stage); },
                            {0, 1, 2, 3});
  return s;
}

MemorySweep figure_tp() {
  MemorySweep s;
  s.models = {"llama3.1-70b"};
  s.seqs = kPlaybookSeqs;
  s.layouts = {ParallelLayout{}};  // t = 1 once: SP has nothing to split without TP
  for (std::int64_t t : {8, 16})
    for (bool sp : {false, true}) {
      ParallelLayout l;
      l.tp = t;
      l.sp = sp;
      s.layouts.push_back(l);
    }
  return s;
}

MemorySweep figure_cp() {
  MemorySweep s;
  s.models = {"llama3.1-8b"};
  s.seqs = {4096, 8192, 16384, 32768, 65536, 131072};
  s.recomputes = {Recompute::selective, Recompute::full};
  s.layouts = layouts_along({}, [](ParallelLayout& l, std::int64_t c) { l.cp = c; }, {1, 2, 4, 8});
  return s;
}

MemorySweep figure_pp() {
  MemorySweep s;
  s.models = {"llama3.1-8b"};
  s.seqs = kPlaybookSeqs;
  s.recomputes = {Recompute::selective, Recompute::full};
  s.layouts = layouts_along({}, [](ParallelLayout& l, std::int64_t p) { l.pp = p; }, {1, 2, 4, 8});
  return s;
}

std::vector<std::string> figure_names() { return {"memory_vs_seq", "recompute", "zero", "tp", "cp", "pp"}; }

MemorySweep figure_by_name(const std::string& name) {
  if (name == "memory_vs_seq") return figure_memory_vs_seq();
  if (name == "recompute") return figure_recompute();
  if (name == "zero") return figure_zero();
  if (name == "tp") return figure_tp();
  if (name == "cp") return figure_cp();
  if (name == "pp") return figure_pp();
  std::string list;
  for (const auto& n : figure_names()) list += (list.empty() ? "" : ", ") + n;
  throw UsageError("unknown sweep '" + name + "' (known: " + list + ")");
}

void print_sweep_table(std::ostream& out, const std::vector<SweepRow>& rows, std::int64_t seq,
                       const std::string& label_header, const std::function<std::string(const TrainingSetup&)>& label) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const auto gib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kGiB};
  };
  const std::string act = "act. s=" + std::to_string(seq);
  report::Table t({{.header = label_header, .format = "%-12s"}, gib("params", " %8.1f"), gib("grads", " %8.1f"),
                   gib("optim", " %8.1f"), gib("states", " %8.1f"), gib(act.c_str(), " %12.1f"),
                   gib("total", " %8.1f")});
  for (const SweepRow& row : rows) {
    if (row.setup.seq != seq) continue;
    const MemoryBreakdown& m = row.memory;
    t.add({label(row.setup), m.parameters, m.gradients, m.optimizer, m.parameters + m.gradients + m.optimizer,
           m.activations, m.total()});
  }
  t.print(out);
}

void print_sweep_tables_by_recompute(std::ostream& out, const std::vector<SweepRow>& rows,
                                     const std::vector<Recompute>& modes, std::int64_t seq,
                                     const std::function<std::string(const TrainingSetup&)>& label) {
  for (Recompute mode : modes) {
    std::vector<SweepRow> of_mode;
    for (const SweepRow& row : rows)
      if (row.setup.recompute == mode) of_mode.push_back(row);
    out << "  " << recompute_name(mode) << " recomputation:\n";
    print_sweep_table(out, of_mode, seq, "layout", label);
  }
}

}  // namespace usp::calc
