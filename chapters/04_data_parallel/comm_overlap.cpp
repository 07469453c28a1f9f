#include "chapters/04_data_parallel/comm_overlap.hpp"

#include <algorithm>
#include <utility>

#include "common/model/unit_spans.hpp"

namespace usp::ch04 {

CommOverlap comm_overlap(const std::vector<Span>& spans) {
  // The union of the backward spans, as sorted disjoint intervals.
  std::vector<std::pair<double, double>> busy;
  for (const Span& s : spans)
    if (s.stream == "compute" && s.name.rfind(kBackwardPrefix, 0) == 0) busy.emplace_back(s.start_us, s.end_us);
  std::sort(busy.begin(), busy.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& iv : busy) {
    if (!merged.empty() && iv.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, iv.second);
    else
      merged.push_back(iv);
  }

  CommOverlap r;
  for (const auto& [b, e] : merged) r.backward_us += e - b;
  for (const Span& s : spans) {
    if (s.stream != "comm") continue;
    r.comm_spans += 1;
    r.comm_us += s.end_us - s.start_us;
    double hidden = 0;
    for (const auto& [b, e] : merged) hidden += std::max(0.0, std::min(e, s.end_us) - std::max(b, s.start_us));
    r.hidden_us += hidden;
    if (hidden > 0) r.overlapping_spans += 1;
  }
  return r;
}

}  // namespace usp::ch04
