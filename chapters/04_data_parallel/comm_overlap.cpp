#include "chapters/04_data_parallel/comm_overlap.hpp"

#include "common/model/unit_spans.hpp"

namespace usp::ch04 {

CommOverlap comm_overlap(const std::vector<Span>& spans) {
  const auto busy = busy_intervals(spans, kBackwardPrefix);  // the union of the backward spans
  CommOverlap r;
  for (const auto& [b, e] : busy) r.backward_us += e - b;
  for (const Span& s : spans) {
    if (s.stream != "comm") continue;
    r.comm_spans += 1;
    r.comm_us += s.end_us - s.start_us;
    const double hidden = covered_us(busy, s.start_us, s.end_us);
    r.hidden_us += hidden;
    if (hidden > 0) r.overlapping_spans += 1;
  }
  return r;
}

}  // namespace usp::ch04
