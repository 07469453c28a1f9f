// The memory tracker's accounting is exact: every byte a tensor owns is counted once, under its
// category, and given back when the last view of its storage goes away.
#include <catch2/catch.hpp>

#include "common/tensor.hpp"

using namespace usp;

namespace {
std::int64_t now(MemCategory c) { return MemoryTracker::instance().current()[c]; }
}  // namespace

TEST_CASE("the tracker counts exact bytes per category", "[core][memory]") {
  auto& tracker = MemoryTracker::instance();
  const MemCounts before = tracker.current();
  {
    Tensor p = Tensor::empty({1000, 3}, DType::f32, MemCategory::Parameter);
    Tensor g = Tensor::empty({1000, 3}, DType::bf16, MemCategory::Gradient);
    Tensor m = Tensor::empty({17}, DType::e4m3, MemCategory::OptimizerState);
    CHECK(now(MemCategory::Parameter) - before[MemCategory::Parameter] == 12000);
    CHECK(now(MemCategory::Gradient) - before[MemCategory::Gradient] == 6000);
    CHECK(now(MemCategory::OptimizerState) - before[MemCategory::OptimizerState] == 17);
    CHECK(tracker.current().total() - before.total() == 18017);

    Tensor view = p.view(10, {100});  // a view allocates nothing
    CHECK(now(MemCategory::Parameter) - before[MemCategory::Parameter] == 12000);
    p = Tensor();  // the view keeps the storage alive
    CHECK(now(MemCategory::Parameter) - before[MemCategory::Parameter] == 12000);
  }
  CHECK(tracker.current().total() == before.total());
}

TEST_CASE("peaks are per category and of the total", "[core][memory]") {
  auto& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  const std::int64_t base_total = tracker.current().total();
  const std::int64_t base_act = tracker.current()[MemCategory::Activation];
  {
    Tensor a = Tensor::empty({4000}, DType::f32, MemCategory::Activation);  // 16000
  }
  {
    Tensor t = Tensor::empty({1000}, DType::f32, MemCategory::Temporary);   // 4000
    Tensor a = Tensor::empty({1000}, DType::f32, MemCategory::Activation);  // 4000
  }
  CHECK(tracker.peak()[MemCategory::Activation] == base_act + 16000);
  CHECK(tracker.peak_total() == base_total + 16000);  // not 16000 + 4000 + 4000
  tracker.reset_peak();
  CHECK(tracker.peak_total() == base_total);
}

TEST_CASE("the timeline records allocations, frees and phase marks", "[core][memory]") {
  auto& tracker = MemoryTracker::instance();
  tracker.clear_timeline();
  tracker.record_timeline(true);
  tracker.mark("forward");
  { Tensor a = Tensor::empty({256}, DType::f32, MemCategory::Activation); }
  tracker.mark("backward");
  tracker.record_timeline(false);
  { Tensor ignored = Tensor::empty({8}); }
  const auto events = tracker.timeline();
  REQUIRE(events.size() == 4);
  CHECK(events[0].mark == "forward");
  CHECK(events[1].delta == 1024);
  CHECK(events[1].category == MemCategory::Activation);
  CHECK(events[2].delta == -1024);
  CHECK(events[2].current[MemCategory::Activation] + 1024 == events[1].current[MemCategory::Activation]);
  CHECK(events[3].mark == "backward");
  for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i].time_s >= events[i - 1].time_s);
}

TEST_CASE("work in an Unmeasured scope leaves the peaks and the timeline as if it had not run", "[core][memory]") {
  auto& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  tracker.clear_timeline();
  tracker.record_timeline(true);
  const std::int64_t base_total = tracker.current().total();
  const std::int64_t base_act = tracker.current()[MemCategory::Activation];
  const std::int64_t base_tmp = tracker.current()[MemCategory::Temporary];
  Tensor kept = Tensor::empty({1000}, DType::f32, MemCategory::Activation);  // 4000, before: measured
  { Tensor step = Tensor::empty({500}, DType::f32, MemCategory::Temporary); }  // 2000, released
  const std::size_t events_before = tracker.timeline().size();
  {
    const MemoryTracker::Unmeasured off_the_books;
    Tensor big = Tensor::empty({100000}, DType::f32, MemCategory::Activation);  // 400000: left out
    Tensor tmp = Tensor::empty({100000}, DType::f32, MemCategory::Temporary);
  }
  CHECK(tracker.timeline().size() == events_before);  // paused inside, ...
  CHECK(tracker.peak()[MemCategory::Activation] == base_act + 4000);
  CHECK(tracker.peak()[MemCategory::Temporary] == base_tmp + 2000);
  CHECK(tracker.peak_total() == base_total + 6000);
  { Tensor after = Tensor::empty({2000}, DType::f32, MemCategory::Activation); }  // 8000: measured again
  CHECK(tracker.timeline().size() == events_before + 2);  // ... recording again after
  CHECK(tracker.peak()[MemCategory::Activation] == base_act + 4000 + 8000);
  CHECK(tracker.peak_total() == base_total + 4000 + 8000);
  tracker.record_timeline(false);
  tracker.clear_timeline();
}
