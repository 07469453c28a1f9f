// The ZeRO-2/3 per-unit plan (see unit_schedule.hpp for the rules).
#include "chapters/05_zero/unit_schedule.hpp"

#include <algorithm>
#include <cstddef>

namespace usp::ch05 {

namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (int x : a)
    if (!contains(b, x)) out.push_back(x);
  return out;
}

}  // namespace

std::string UnitStep::name() const {
  return std::string(backward ? "backward" : "forward") + " unit " + std::to_string(unit);
}

std::vector<UnitStep> unit_schedule(int num_units, bool tied, bool prefetch) {
  const int head = num_units - 1;
  std::vector<UnitStep> plan;
  auto add = [&](bool backward, int unit) {
    UnitStep s;
    s.backward = backward;
    s.unit = unit;
    s.reads = {unit};
    if (tied && unit == head && head != 0) s.reads.push_back(0);
    plan.push_back(std::move(s));
  };
  for (int u = 0; u < num_units; ++u) add(false, u);
  for (int u = head; u >= 0; --u) add(true, u);

  const std::size_t n = plan.size();
  for (std::size_t i = 0; i < n; ++i) {
    UnitStep& s = plan[i];
    // Parameters: whatever the previous step prefetched is already on its way; gather the rest.
    s.gather = i > 0 ? minus(s.reads, plan[i - 1].prefetch) : s.reads;
    if (prefetch && i + 1 < n) s.prefetch = minus(plan[i + 1].reads, s.reads);
    s.release = s.reads;
    if (!s.backward) continue;
    // Gradients: opened by the first backward step that writes them, reduced after the last.
    for (int u : s.reads) {
      bool opened_before = false, written_later = false;
      for (std::size_t j = 0; j < n; ++j) {
        if (!plan[j].backward || !contains(plan[j].reads, u)) continue;
        if (j < i) opened_before = true;
        if (j > i) written_later = true;
      }
      if (!opened_before) s.open_grads.push_back(u);
      if (!written_later) s.reduce_grads.push_back(u);
    }
  }
  return plan;
}

int max_units_held(const std::vector<UnitStep>& plan) {
  std::size_t most = 0;
  for (const UnitStep& s : plan) most = std::max(most, s.reads.size() + s.prefetch.size());
  return static_cast<int>(most);
}

std::vector<int> gathers_per_unit(const std::vector<UnitStep>& plan, int num_units) {
  std::vector<int> count(static_cast<std::size_t>(num_units), 0);
  for (const UnitStep& s : plan) {
    for (int u : s.gather) ++count[static_cast<std::size_t>(u)];
    for (int u : s.prefetch) ++count[static_cast<std::size_t>(u)];
  }
  return count;
}

}  // namespace usp::ch05
