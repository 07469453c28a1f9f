#include "common/model/unit_spans.hpp"

#include <memory>
#include <vector>

#include "common/trace.hpp"

namespace usp {

std::string unit_name(int unit, int layers) {
  if (unit == 0) return "embedding";
  if (unit == layers + 1) return "head";
  return "layer " + std::to_string(unit - 1);
}

void trace_units(ModelHooks& hooks, int layers) {
  // Start times per unit, shared by the four hooks (a unit's forward or backward never nests).
  auto start = std::make_shared<std::vector<double>>(static_cast<std::size_t>(layers + 2), -1.0);
  auto open = [start](int unit) {
    Tracer& t = Tracer::instance();
    (*start)[static_cast<std::size_t>(unit)] = t.enabled() ? t.now_us() : -1.0;
  };
  auto close = [start, layers](const char* phase, int unit) {
    const double s = (*start)[static_cast<std::size_t>(unit)];
    if (s < 0) return;  // tracing was off when the unit started
    Tracer& t = Tracer::instance();
    t.add(std::string(phase) + unit_name(unit, layers), "compute", s, t.now_us());
  };
  hooks.before_forward = open;
  hooks.after_forward = [close](int unit) { close("forward ", unit); };
  hooks.before_backward = open;
  hooks.after_backward = [close](int unit) { close(kBackwardPrefix, unit); };
}

}  // namespace usp
