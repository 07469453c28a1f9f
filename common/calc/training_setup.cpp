#include "common/calc/training_setup.hpp"

#include "common/enum_names.hpp"
#include "common/error.hpp"

namespace usp::calc {

namespace {
constexpr EnumNames<Precision, 2> kPrecisionNames{{{{Precision::fp32, "fp32"}, {Precision::mixed, "mixed"}}}};
}  // namespace

const char* precision_name(Precision p) { return kPrecisionNames.name(p); }
Precision parse_precision(const std::string& s) { return kPrecisionNames.parse(s, "precision"); }

void TrainingSetup::validate() const {
  model.validate();
  auto positive = [](std::int64_t v, const char* flag) {
    if (v < 1) throw UsageError(std::string(flag) + " must be >= 1, got " + std::to_string(v));
  };
  positive(seq, "--seq");
  positive(mbs, "--mbs");
  positive(dp, "--dp");
  positive(tp, "--tp");
  positive(cp, "--cp");
  positive(pp, "--pp");
  positive(ep, "--ep");
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (zero < 0 || zero > 3) throw UsageError("--zero must be 0, 1, 2 or 3, got " + str(zero));
  if (ep != 1 && !model.is_moe())
    throw UsageError("--ep " + str(ep) + ": expert parallelism needs a mixture of experts (" + model.name +
                     " is dense; e.g. --model mixtral-8x7b)");
  if (model.is_moe() && model.experts % ep != 0)
    throw UsageError("--ep " + str(ep) + " must divide the number of experts (" + str(model.experts) + ")");
  if ((dp * cp) % ep != 0)
    throw UsageError("--ep " + str(ep) + " must divide dp·cp = " + str(dp * cp) +
                     " (the experts are spread over ranks that are data-parallel for the rest)");
  if (model.heads % tp != 0)
    throw UsageError("--tp " + str(tp) + " must divide the number of heads (" + str(model.heads) + ")");
  if (model.kv_heads % tp != 0 && tp % model.kv_heads != 0)
    throw UsageError("--tp " + str(tp) + " must divide the kv heads (" + str(model.kv_heads) +
                     ") or be a multiple of them (kv heads are then replicated)");
  if (model.ffn % tp != 0)
    throw UsageError("--tp " + str(tp) + " must divide the ffn size (" + str(model.ffn) + ")");
  if (sp && seq % tp != 0)
    throw UsageError("--seq " + str(seq) + " must be divisible by --tp " + str(tp) +
                     " with --sp (the sequence is split over the TP ranks)");
  if (seq % cp != 0)
    throw UsageError("--seq " + str(seq) + " must be divisible by --cp " + str(cp));
  if (pp > model.layers)
    throw UsageError("--pp " + str(pp) + " must be <= the number of layers (" + str(model.layers) + ")");
  if (stage < 0 || stage >= pp)
    throw UsageError("--stage " + str(stage) + " must be a pipeline stage, 0 .. pp-1 = " + str(pp - 1));
  if (fp32_grad_accum && precision != Precision::mixed)
    throw UsageError("--fp32-grad-accum only applies to --precision mixed (fp32 gradients are already fp32)");
}

}  // namespace usp::calc
