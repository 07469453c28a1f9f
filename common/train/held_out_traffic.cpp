#include "common/train/held_out_traffic.hpp"

namespace usp {

namespace {

// after - before, counter by counter (the counters only grow between the two).
CommStats difference(const CommStats& after, const CommStats& before) {
  CommStats d;
  for (std::size_t i = 0; i < d.calls.size(); ++i) {
    d.calls[i] = after.calls[i] - before.calls[i];
    d.payload_bytes[i] = after.payload_bytes[i] - before.payload_bytes[i];
    d.bytes_sent[i] = after.bytes_sent[i] - before.bytes_sent[i];
  }
  return d;
}

}  // namespace

double HeldOutTraffic::count(const std::function<double()>& evaluate) {
  const CommStats before = comm_.stats();
  const double loss = evaluate();
  evaluations_ += difference(comm_.stats(), before);
  return loss;
}

CommStats HeldOutTraffic::training_stats() const { return difference(comm_.stats(), evaluations_); }

}  // namespace usp
