// Chapter 08: pipeline schedules as data. Every generated schedule passes the validator, for
// p = 1..8 ranks and m = 1..16 micro-batches (v = 1..3 chunks interleaved); hand-broken lists
// are rejected with a message naming the rank, the op and the reason. The simulator's bubble
// (idle / busy, schedule_simulator.hpp) equals the playbook's (p-1)/m for AFAB and 1F1B and
// (p-1)/(v·m) for interleaved 1F1B, and ZB-H1's idle time the zero-bubble paper's
// (p-1)(T_F + T_B - T_W) per rank, exactly: the durations are integers, so every simulated time
// and sum is exact. Activations in flight: m for AFAB, p - r on rank r for 1F1B, p on every rank
// for ZB-H1. 1F1B (exercise 08.1) and ZB-H1 (exercise 08.2) also against hand-worked orders;
// with_communication (exercise 08.1 too) against hand-worked lists; ZB-H2 (exercise 08.2 too)
// against its parallelogram. With the stubs the exercises' cases fail naming the exercise, and so
// do the generated schedules' (every list gets its messages from exercise 08.1).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"
#include "chapters/08_pipeline_parallel/schedule_formulas.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "chapters/08_pipeline_parallel/schedule_validator.hpp"
#include "common/error.hpp"

using namespace usp;
using namespace usp::ch08;

namespace {

constexpr OpKind F = OpKind::F, B = OpKind::B, W = OpKind::W, BW = OpKind::BW;

// t_F = t_B = t_W = 1: the whole backward BW takes 2 = 2 t_F, the playbook's assumption, and
// the zero-bubble paper's T_F = T_B = T_W.
const StageCost kUnit{1, 1, 1};

Simulation simulate_uniform(const Schedule& s, StageCost cost = kUnit, double latency = 0) {
  return simulate(s, uniform_costs(s.layout.num_stages(), cost, latency));
}

// Rank r's compute ops (communication left out), as "F0 BW0 ..." for readable failures.
std::string compute_text(const Schedule& s, int r) {
  std::ostringstream out;
  for (const Op& op : s.ops[static_cast<std::size_t>(r)]) {
    if (!is_compute(op.kind)) continue;
    if (out.tellp() > 0) out << ' ';
    out << op_kind_name(op.kind) << op.mb;
    if (s.v > 1) out << '.' << op.chunk;
  }
  return out.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// "" when every rank runs each kind of compute op (per chunk) over the micro-batches in order
// 0, 1, 2, ...; else the first op out of order, e.g. "rank 2: W(3) where W(1) comes next".
std::string out_of_order(const Schedule& s) {
  for (int r = 0; r < s.p; ++r) {
    std::map<std::pair<OpKind, int>, int> next;  // (kind, chunk) -> the micro-batch due
    for (const Op& op : s.ops[static_cast<std::size_t>(r)]) {
      if (!is_compute(op.kind)) continue;
      int& due = next[{op.kind, op.chunk}];
      if (op.mb != due)
        return "rank " + std::to_string(r) + ": " + op_name(op, s.v) + " where " +
               op_name({op.kind, due, op.chunk}, s.v) + " comes next";
      ++due;
    }
  }
  return "";
}

// Checks the bubble is exactly (p-1)/(v·m): Σ idle · v·m == (p-1) · Σ busy in exact integers,
// and the ratio the simulator reports equals the formula's double bit for bit.
void check_bubble(const Simulation& sim, int p, int m, int v) {
  const double idle = sim.total_idle(), busy = sim.total_busy();
  CHECK(idle * v * m == (p - 1) * busy);
  CHECK(sim.bubble() == static_cast<double>(p - 1) / (v * m));
}

}  // namespace

// ---- the data ----------------------------------------------------------------------------------

TEST_CASE("layout: chunk c of rank r is virtual stage c·p + r (Megatron-LM)", "[ch08]") {
  const StageLayout l = StageLayout::looped(4, 2);
  CHECK(l.num_stages() == 8);
  CHECK(l.stage_of(0, 0) == 0);
  CHECK(l.stage_of(3, 0) == 3);
  CHECK(l.stage_of(0, 1) == 4);
  CHECK(l.stage_of(3, 1) == 7);
  for (int s = 0; s < 8; ++s) CHECK(l.stage_of(l.rank_of(s), l.chunk_of(s)) == s);
}

TEST_CASE("with_communication (exercise 08.1): a receive right before the op that needs it, a send right after the "
          "op that made it", "[ch08]") {
  // p = 2, m = 1: rank 0 sends the activation and receives the gradient, rank 1 the reverse.
  const StageLayout l = StageLayout::looped(2, 1);
  const auto ops = with_communication(l, {{{F, 0, 0}, {BW, 0, 0}}, {{F, 0, 0}, {BW, 0, 0}}});
  const std::vector<Op> rank0{{F, 0, 0}, {OpKind::send_act, 0, 0}, {OpKind::recv_grad, 0, 0}, {BW, 0, 0}};
  const std::vector<Op> rank1{{OpKind::recv_act, 0, 0}, {F, 0, 0}, {BW, 0, 0}, {OpKind::send_grad, 0, 0}};
  REQUIRE(ops.size() == 2);
  CHECK(ops[0] == rank0);
  CHECK(ops[1] == rank1);
  CHECK(peer_rank(l, 0, {OpKind::send_act, 0, 0}) == 1);
  CHECK(peer_rank(l, 1, {OpKind::send_grad, 0, 0}) == 0);
}

TEST_CASE("with_communication (exercise 08.1): B takes the gradient in and sends its own out; W moves nothing",
          "[ch08]") {
  // p = 3, the middle rank: it receives the activation and the output gradient, sends both on.
  const StageLayout l = StageLayout::looped(3, 1);
  const std::vector<Op> middle{{F, 0, 0}, {F, 1, 0}, {B, 0, 0}, {W, 0, 0}, {B, 1, 0}, {W, 1, 0}};
  const auto ops = with_communication(l, {{}, middle, {}});
  REQUIRE(ops.size() == 3);
  const std::vector<Op> want{{OpKind::recv_act, 0, 0},  {F, 0, 0},  {OpKind::send_act, 0, 0},  {OpKind::recv_act, 1, 0},
                             {F, 1, 0},                 {OpKind::send_act, 1, 0},               {OpKind::recv_grad, 0, 0},
                             {B, 0, 0},                 {OpKind::send_grad, 0, 0},              {W, 0, 0},
                             {OpKind::recv_grad, 1, 0}, {B, 1, 0}, {OpKind::send_grad, 1, 0}, {W, 1, 0}};
  CHECK(ops[1] == want);
  CHECK(ops[0].empty());
  CHECK(ops[2].empty());
}

TEST_CASE("with_communication (exercise 08.1): no message between two stages of one rank", "[ch08]") {
  // p = 1, v = 2: both stages on rank 0, handed over locally: no message at all.
  const auto local = with_communication(StageLayout::looped(1, 2), {{{F, 0, 0}, {F, 0, 1}, {BW, 0, 1}, {BW, 0, 0}}});
  CHECK(local[0] == std::vector<Op>{{F, 0, 0}, {F, 0, 1}, {BW, 0, 1}, {BW, 0, 0}});
  // The V of p = 2: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2. Rank 1 turns the
  // micro-batch (stage 1 -> 2) locally; rank 0's chunk 1 is the last stage (the loss: no gradient
  // comes in) and its chunk 0 the first (the data: no activation comes in).
  const StageLayout v = StageLayout::v_shape(2);
  const auto ops = with_communication(
      v, {{{F, 0, 0}, {F, 0, 1}, {BW, 0, 1}, {BW, 0, 0}}, {{F, 0, 0}, {F, 0, 1}, {BW, 0, 1}, {BW, 0, 0}}});
  const std::vector<Op> rank0{{F, 0, 0},  {OpKind::send_act, 0, 0},  {OpKind::recv_act, 0, 1},
                              {F, 0, 1},  {BW, 0, 1},                {OpKind::send_grad, 0, 1},
                              {OpKind::recv_grad, 0, 0}, {BW, 0, 0}};
  const std::vector<Op> rank1{{OpKind::recv_act, 0, 0}, {F, 0, 0}, {F, 0, 1}, {OpKind::send_act, 0, 1},
                              {OpKind::recv_grad, 0, 1}, {BW, 0, 1}, {BW, 0, 0}, {OpKind::send_grad, 0, 0}};
  CHECK(ops[0] == rank0);
  CHECK(ops[1] == rank1);
  // Looped, p = 2, v = 2: stage 2 (rank 0, chunk 1) receives from stage 1 on rank 1.
  const auto looped = with_communication(StageLayout::looped(2, 2), {{{F, 0, 1}}, {}});
  CHECK(looped[0] == std::vector<Op>{{OpKind::recv_act, 0, 1}, {F, 0, 1}, {OpKind::send_act, 0, 1}});
}

TEST_CASE("with_communication (exercise 08.1): refuses a list that is not a compute order, saying why", "[ch08]") {
  const StageLayout l = StageLayout::looped(2, 1);
  CHECK_THROWS_WITH(with_communication(l, {{{F, 0, 0}}, {{OpKind::recv_act, 0, 0}, {F, 0, 0}}}),
                    "rank 1's compute list holds recv_act: communication is added here, not by the schedule's order");
  CHECK_THROWS_WITH(with_communication(l, {{{F, 0, 0}, {F, 0, 1}}, {}}),
                    "rank 0's compute list names chunk 1 of v = 1");
  CHECK_THROWS_WITH(with_communication(l, {{}, {{F, 0, -1}}}), "rank 1's compute list names chunk -1 of v = 1");
}

TEST_CASE("make_schedule refuses what a schedule does not support, saying why", "[ch08]") {
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::afab, 4, 8, 2),
                    Catch::Contains("only the interleaved schedule splits a rank's layers into chunks; afab needs v = 1"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::interleaved_1f1b, 4, 6, 2),
                    Catch::Contains("m must be a multiple of p; got m = 6, p = 4"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::afab, 4, 0), Catch::Contains("m >= 1 micro-batches, got m = 0"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::afab, 0, 4), Catch::Contains("p >= 1 ranks, got p = 0"));
  CHECK_THROWS_AS(make_schedule(ScheduleKind::zb_h1, 2, 2, 3), UsageError);
  CHECK_THROWS_WITH(parse_schedule_kind("gpipe"), Catch::Contains("afab, 1f1b, interleaved, zb-h1"));
}

// ---- the validator on hand-broken schedules (AFAB written out by hand, so no exercise needed) ---

namespace {

// AFAB on p = 2, m = 2 with its communication, written out (no exercise's code), to break by hand:
//   rank 0: F0 send_act0 F1 send_act1 recv_grad0 BW0 recv_grad1 BW1
//   rank 1: recv_act0 F0 recv_act1 F1 BW0 send_grad0 BW1 send_grad1
Schedule small_afab() {
  constexpr OpKind sa = OpKind::send_act, ra = OpKind::recv_act, sg = OpKind::send_grad, rg = OpKind::recv_grad;
  return {ScheduleKind::afab, 2, 2, 1, StageLayout::looped(2, 1),
          {{{F, 0, 0}, {sa, 0, 0}, {F, 1, 0}, {sa, 1, 0}, {rg, 0, 0}, {BW, 0, 0}, {rg, 1, 0}, {BW, 1, 0}},
           {{ra, 0, 0}, {F, 0, 0}, {ra, 1, 0}, {F, 1, 0}, {BW, 0, 0}, {sg, 0, 0}, {BW, 1, 0}, {sg, 1, 0}}}};
}

}  // namespace

TEST_CASE("validator: accepts the hand-worked AFAB and says nothing", "[ch08]") {
  const Schedule s = small_afab();
  REQUIRE(s.ops[0].size() == 8);
  CHECK(validate_schedule(s).empty());
}

TEST_CASE("validator: a receive placed before its send on both sides is a deadlock", "[ch08]") {
  Schedule s = small_afab();
  // Rank 0 waits for the gradient of micro-batch 0 before sending any activation; rank 1 waits
  // for that activation: a cycle of receives.
  auto& r0 = s.ops[0];
  r0.insert(r0.begin(), Op{OpKind::recv_grad, 0, 0});
  r0.erase(r0.begin() + 5);  // the old recv_grad0, now at index 5
  const std::string e = validate_schedule(s);
  CHECK(contains(e, "deadlock"));
  CHECK(contains(e, "rank 0 waits at op 0 (recv_grad(0)) for rank 1"));
  CHECK(contains(e, "rank 1 waits at op 0 (recv_act(0)) for rank 0"));
}

TEST_CASE("validator: a cycle through two micro-batches is a deadlock", "[ch08]") {
  Schedule s = small_afab();
  // Rank 1 receives micro-batch 1's activation first and sends gradient 0 only after it; rank 0
  // sends activation 1 only after receiving gradient 0: each waits for the other.
  s.ops[0] = {{F, 0, 0}, {OpKind::send_act, 0, 0}, {OpKind::recv_grad, 0, 0}, {BW, 0, 0}, {F, 1, 0},
              {OpKind::send_act, 1, 0}, {OpKind::recv_grad, 1, 0}, {BW, 1, 0}};
  s.ops[1] = {{OpKind::recv_act, 1, 0}, {OpKind::recv_act, 0, 0}, {F, 0, 0}, {BW, 0, 0}, {OpKind::send_grad, 0, 0},
              {F, 1, 0}, {BW, 1, 0}, {OpKind::send_grad, 1, 0}};
  const std::string e = validate_schedule(s);
  CHECK(contains(e, "deadlock"));
  CHECK(contains(e, "rank 0 waits at op 2 (recv_grad(0)) for rank 1"));
  CHECK(contains(e, "rank 1 waits at op 0 (recv_act(1)) for rank 0"));
}

TEST_CASE("validator: missing and duplicated ops", "[ch08]") {
  SECTION("a missing forward") {
    Schedule s = small_afab();
    s.ops[1].erase(s.ops[1].begin() + 3);  // F1
    CHECK(validate_schedule(s) == "rank 1: F(1) is missing");
  }
  SECTION("a duplicated backward") {
    Schedule s = small_afab();
    s.ops[0].push_back({BW, 1, 0});
    CHECK(validate_schedule(s) == "rank 0, op 8 (BW(1)): duplicate: BW(1) already runs at op 7");
  }
  SECTION("B without its W") {
    Schedule s = small_afab();
    s.ops[0][5] = {B, 0, 0};
    CHECK(contains(validate_schedule(s), "rank 0: W(0) is missing: B at op 5 computes only the input gradient"));
  }
  SECTION("BW and B for the same micro-batch") {
    Schedule s = small_afab();
    s.ops[0].push_back({B, 1, 0});
    CHECK(contains(validate_schedule(s), "rank 0, op 8 (B(1)): the backward runs twice"));
  }
  SECTION("a send whose receive is missing") {
    Schedule s = small_afab();
    s.ops[1].erase(s.ops[1].begin() + 2);  // recv_act1
    CHECK(validate_schedule(s) == "rank 1: recv_act(1) is missing: F needs the activation rank 0 sends");
  }
  SECTION("a message where no boundary between ranks is") {
    Schedule s = small_afab();
    s.ops[0].push_back({OpKind::recv_act, 0, 0});
    CHECK(contains(validate_schedule(s), "rank 0, op 8 (recv_act(0)): no message crosses there"));
  }
  SECTION("a micro-batch out of range") {
    Schedule s = small_afab();
    s.ops[1][1].mb = 2;
    CHECK(validate_schedule(s) == "rank 1, op 1 (F(2)): micro-batch 2 is not in 0..1");
  }
}

TEST_CASE("validator: an op whose input is not there yet", "[ch08]") {
  SECTION("F before its activation was received") {
    Schedule s = small_afab();
    std::swap(s.ops[1][0], s.ops[1][1]);  // F0 before recv_act0
    CHECK(validate_schedule(s) ==
          "rank 1, op 0 (F(0)): its input activation has not been received yet (recv_act(0) is at op 1)");
  }
  SECTION("BW before its forward") {
    Schedule s = small_afab();
    s.ops[1] = {{OpKind::recv_act, 0, 0}, {BW, 0, 0}, {F, 0, 0}, {OpKind::recv_act, 1, 0}, {F, 1, 0},
                {OpKind::send_grad, 0, 0}, {BW, 1, 0}, {OpKind::send_grad, 1, 0}};
    CHECK(validate_schedule(s) == "rank 1, op 1 (BW(0)): its forward has not run on this rank yet (F(0) is at op 2)");
  }
  SECTION("BW before its output gradient arrived") {
    Schedule s = small_afab();
    std::swap(s.ops[0][4], s.ops[0][5]);  // BW0 before recv_grad0
    CHECK(validate_schedule(s) ==
          "rank 0, op 4 (BW(0)): its output gradient has not been received yet (recv_grad(0) is at op 5)");
  }
  SECTION("W before its B") {
    Schedule s = small_afab();
    s.ops[0][5] = {W, 0, 0};
    s.ops[0].push_back({B, 0, 0});
    CHECK(validate_schedule(s) == "rank 0, op 5 (W(0)): its B has not run yet (B(0) is at op 8)");
  }
  SECTION("a send before the forward that makes its tensor") {
    Schedule s = small_afab();
    std::swap(s.ops[0][0], s.ops[0][1]);
    CHECK(contains(validate_schedule(s), "rank 0, op 0 (send_act(0)): it sends F's output before F has run"));
  }
  SECTION("the next stage's forward before the previous one, on one rank (p = 1, v = 2)") {
    const Schedule s{ScheduleKind::interleaved_1f1b, 1, 1, 2, StageLayout::looped(1, 2),
                     {{{F, 0, 1}, {F, 0, 0}, {BW, 0, 1}, {BW, 0, 0}}}};
    CHECK(contains(validate_schedule(s), "rank 0, op 0 (F(0, chunk 1)): the previous stage's forward"));
  }
}

// ---- every generated schedule: valid, and its bubble and memory as the formulas say -------------

TEST_CASE("AFAB: valid; bubble (p-1)/m; m micro-batches in flight on every rank", "[ch08]") {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      INFO("p = " << p << ", m = " << m);
      const Schedule s = make_schedule(ScheduleKind::afab, p, m);
      REQUIRE(validate_schedule(s).empty());
      const Simulation sim = simulate_uniform(s);
      check_bubble(sim, p, m, 1);
      for (int r = 0; r < p; ++r) CHECK(sim.peak_in_flight[static_cast<std::size_t>(r)] == m);
    }
}

TEST_CASE("1F1B (exercise 08.1): the hand-worked order for p = 3, m = 4", "[ch08]") {
  const Schedule s = make_schedule(ScheduleKind::one_f_one_b, 3, 4);
  CHECK(compute_text(s, 0) == "F0 F1 F2 BW0 F3 BW1 BW2 BW3");
  CHECK(compute_text(s, 1) == "F0 F1 BW0 F2 BW1 F3 BW2 BW3");
  CHECK(compute_text(s, 2) == "F0 BW0 F1 BW1 F2 BW2 F3 BW3");
}

TEST_CASE("1F1B (exercise 08.1): valid; bubble (p-1)/m; p - r micro-batches in flight on rank r", "[ch08]") {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      INFO("p = " << p << ", m = " << m);
      const Schedule s = make_schedule(ScheduleKind::one_f_one_b, p, m);
      REQUIRE(validate_schedule(s).empty());
      CHECK(out_of_order(s) == "");
      const Simulation sim = simulate_uniform(s);
      check_bubble(sim, p, m, 1);
      for (int r = 0; r < p; ++r) CHECK(sim.peak_in_flight[static_cast<std::size_t>(r)] == std::min(p - r, m));
    }
}

TEST_CASE("1F1B (exercise 08.1): the bubble does not depend on t_BW / t_F, and is AFAB's", "[ch08]") {
  for (const StageCost cost : {StageCost{1, 2, 2}, StageCost{3, 1, 1}, StageCost{2, 3, 0}}) {
    const Schedule one = make_schedule(ScheduleKind::one_f_one_b, 4, 8);
    const Schedule all = make_schedule(ScheduleKind::afab, 4, 8);
    const Simulation a = simulate_uniform(one, cost), b = simulate_uniform(all, cost);
    CHECK(a.step_time == b.step_time);
    CHECK(a.step_time == (8 + 3) * (cost.f + cost.b + cost.w));
  }
}

TEST_CASE("the simulator, hand-worked: 1F1B on p = 2, m = 2 with a send latency of 1", "[ch08]") {
  // t_F = 1, t_BW = 2, latency 1. Rank 0: F0 [0,1], F1 [1,2]; its activation 0 reaches rank 1
  // at 2: rank 1 F0 [2,3], BW0 [3,5]; activation 1 arrived at 3: F1 [5,6], BW1 [6,8].
  // Gradient 0 reaches rank 0 at 6: BW0 [6,8]; gradient 1 at 9: BW1 [9,11]. Step 11; busy 6
  // per rank: idle 5 + 5 over busy 12.
  // The order is written out here, so that the simulator's test does not need exercise 08.1.
  const StageLayout l = StageLayout::looped(2, 1);
  const Schedule s{ScheduleKind::one_f_one_b, 2, 2, 1, l,
                   with_communication(l, {{{F, 0, 0}, {F, 1, 0}, {BW, 0, 0}, {BW, 1, 0}},
                                          {{F, 0, 0}, {BW, 0, 0}, {F, 1, 0}, {BW, 1, 0}}})};
  const Simulation sim = simulate_uniform(s, kUnit, 1);
  auto span = [&](int r, std::size_t i) {
    const TimedOp& t = sim.timeline[static_cast<std::size_t>(r)][i];
    return std::vector<double>{t.start, t.end};
  };
  CHECK(span(0, 0) == std::vector<double>{0, 1});
  CHECK(span(0, 1) == std::vector<double>{1, 2});
  CHECK(span(0, 2) == std::vector<double>{6, 8});
  CHECK(span(0, 3) == std::vector<double>{9, 11});
  CHECK(span(1, 0) == std::vector<double>{2, 3});
  CHECK(span(1, 1) == std::vector<double>{3, 5});
  CHECK(span(1, 2) == std::vector<double>{5, 6});
  CHECK(span(1, 3) == std::vector<double>{6, 8});
  CHECK(sim.step_time == 11);
  CHECK(sim.bubble() == 10.0 / 12.0);
  CHECK(sim.idle_fraction() == 10.0 / 22.0);
  // Rank 0 holds 2 micro-batches from t = 1 until BW0 ends at 8, then 1 until 11.
  const std::vector<InFlightPoint>& f = sim.in_flight[0];
  REQUIRE(f.size() == 5);
  CHECK((f[2].time == 1 && f[2].count == 2));
  CHECK((f[3].time == 8 && f[3].count == 1));
  CHECK((f[4].time == 11 && f[4].count == 0));
}

TEST_CASE("interleaved 1F1B: valid; bubble (p-1)/(v·m)", "[ch08]") {
  for (int v = 1; v <= 3; ++v)
    for (int p = 1; p <= 8; ++p)
      for (int m = p; m <= 16; m += p) {
        INFO("p = " << p << ", m = " << m << ", v = " << v);
        const Schedule s = make_schedule(ScheduleKind::interleaved_1f1b, p, m, v);
        REQUIRE(validate_schedule(s).empty());
        check_bubble(simulate_uniform(s), p, m, v);
      }
}

TEST_CASE("ZB-H1 (exercise 08.2): the hand-worked order for p = 3, m = 4", "[ch08]") {
  const Schedule s = make_schedule(ScheduleKind::zb_h1, 3, 4);
  CHECK(compute_text(s, 0) == "F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3");
  CHECK(compute_text(s, 1) == "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3");
  CHECK(compute_text(s, 2) == "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3");
}

TEST_CASE("ZB-H1 (exercise 08.2): valid; idle (p-1)(T_F + T_B - T_W) per rank; p in flight", "[ch08]") {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      INFO("p = " << p << ", m = " << m);
      const Schedule s = make_schedule(ScheduleKind::zb_h1, p, m);
      REQUIRE(validate_schedule(s).empty());
      CHECK(out_of_order(s) == "");
      if (m < p) continue;  // the paper's formula is for m >= p
      const Simulation sim = simulate_uniform(s);
      for (int r = 0; r < p; ++r) {
        INFO("rank " << r);
        CHECK(sim.idle(r) == (p - 1) * (kUnit.f + kUnit.b - kUnit.w));
        CHECK(sim.peak_in_flight[static_cast<std::size_t>(r)] == p);
      }
      // A third of 1F1B's bubble: (p-1)/(3m).
      CHECK(sim.total_idle() * 3 * m == (p - 1) * sim.total_busy());
      CHECK(sim.bubble() == static_cast<double>(p - 1) / (3 * m));
    }
}

TEST_CASE("ZB-H1 (exercise 08.2): idle (p-1)(T_F + T_B - T_W) per rank for unequal costs with T_W <= T_B", "[ch08]") {
  // Rank r ends r (T_B - T_W) before rank 0 does (its r postponed W's against the r B's still
  // on their way down), so rank 0 ends the step as long as T_W <= T_B.
  for (const StageCost cost : {StageCost{2, 2, 1}, StageCost{1, 2, 1}, StageCost{3, 2, 1}, StageCost{2, 3, 1}})
    for (int p : {2, 3, 8})
      for (int m : {p, p + 1, 16}) {
        INFO("t_F = " << cost.f << ", t_B = " << cost.b << ", t_W = " << cost.w << ", p = " << p << ", m = " << m);
        const Simulation sim = simulate_uniform(make_schedule(ScheduleKind::zb_h1, p, m), cost);
        for (int r = 0; r < p; ++r) CHECK(sim.idle(r) == (p - 1) * (cost.f + cost.b - cost.w));
      }
}

TEST_CASE("ZB-H2 (exercise 08.2): valid; for m >= p a parallelogram — the least step any schedule can take, (p-1)·t_F idle per "
          "rank; at most 2p-1 in flight", "[ch08]") {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      INFO("p = " << p << ", m = " << m);
      const Schedule s = make_schedule(ScheduleKind::zb_h2, p, m);
      REQUIRE(validate_schedule(s).empty());
      CHECK(out_of_order(s) == "");
      for (const StageCost cost : {StageCost{1, 1, 1}, StageCost{2, 2, 2}}) {
        const Simulation sim = simulate_uniform(s, cost);
        for (int r = 0; r < p; ++r) CHECK(sim.peak_in_flight[static_cast<std::size_t>(r)] <= 2 * p - 1);
        // With fewer micro-batches than ranks the first gradient cannot come back before the
        // forwards run out, and the last one has to travel back up the ranks: no parallelogram.
        if (m < p) continue;
        // The last rank cannot start before the first forward reached it, (p-1)·t_F, and then has
        // m(t_F + t_B + t_W) of work: the step cannot be shorter, and this one is not.
        CHECK(sim.step_time == (p - 1) * cost.f + m * (cost.f + cost.b + cost.w));
        for (int r = 0; r < p; ++r) {
          INFO("rank " << r);
          CHECK(sim.idle(r) == (p - 1) * cost.f);
        }
        // Rank 0 fills the memory limit when it has enough micro-batches.
        if (m >= 2 * p - 1) CHECK(sim.peak_in_flight[0] == 2 * p - 1);
        CHECK(sim.bubble() == bubble_formula(ScheduleKind::zb_h2, p, m, 1, cost).value);
      }
    }
}

TEST_CASE("DualPipeV: the V layout, valid; (p-1)·t_F idle per rank with equal chunk costs; m < 2p refused",
          "[ch08]") {
  const StageLayout v = StageLayout::v_shape(4);
  CHECK((v.stage_of(0, 0) == 0 && v.stage_of(0, 1) == 7 && v.stage_of(3, 0) == 3 && v.stage_of(3, 1) == 4));
  for (int p = 1; p <= 8; ++p)
    for (int m = 2 * p; m <= 3 * p + 1; ++m) {
      INFO("p = " << p << ", m = " << m);
      const Schedule s = make_schedule(ScheduleKind::dualpipev, p, m, 2);
      REQUIRE(validate_schedule(s).empty());
      // Rank p-1 hands its chunk 0's output to its chunk 1 and the gradient back: no message.
      for (const Op& op : s.ops[static_cast<std::size_t>(p - 1)])
        CHECK_FALSE(((op.kind == OpKind::send_act && op.chunk == 0) || (op.kind == OpKind::recv_act && op.chunk == 1)));
      for (const StageCost cost : {StageCost{1, 1, 1}, StageCost{3, 3, 3}}) {
        const Simulation sim = simulate_uniform(s, cost);
        for (int r = 0; r < p; ++r) CHECK(sim.idle(r) == (p - 1) * cost.f);
        CHECK(sim.bubble() == bubble_formula(ScheduleKind::dualpipev, p, m, 2, cost).value);
      }
    }
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::dualpipev, 4, 7, 2), Catch::Contains("DualPipeV needs m >= 2p"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::dualpipev, 4, 8, 1), Catch::Contains("DualPipeV runs v = 2"));
}
