// Mesh: group membership for hand-worked layouts and rank orders, properties that must hold for
// every valid layout, refusal of invalid ones, and (under mpirun) the communicators Mesh splits.
//
// The expected groups below are worked out from the rule in mesh.hpp: the order lists the
// dimensions fastest-varying first, so with "tp-cp-dp-pp" and tp=dp=pp=2 a rank is
// tp + 2·dp + 4·pp (cp = 1 adds nothing).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "common/mesh.hpp"
#include "tests/support/test_world.hpp"

using usp::MeshDim;
using usp::MeshLayout;
using usp::MeshSizes;
using Groups = std::vector<std::vector<int>>;

namespace {

constexpr MeshDim kDims[] = {MeshDim::dp, MeshDim::tp, MeshDim::cp, MeshDim::pp};

MeshSizes sizes(int dp, int tp, int cp, int pp, int ep = 1) { return {.dp = dp, .tp = tp, .cp = cp, .pp = pp, .ep = ep}; }

// The distinct groups a per-rank function yields, in order of their first member's appearance
// when walking ranks 0, 1, 2 ...: the way the expected lists below are written.
template <class F> Groups distinct_groups(const MeshLayout& layout, F group_of) {
  Groups out;
  for (int r = 0; r < layout.world_size(); ++r) {
    auto g = group_of(r);
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

Groups groups(const MeshLayout& layout, MeshDim d) {
  return distinct_groups(layout, [&](int r) { return layout.group(r, d); });
}

Groups singletons(int world) {
  Groups g;
  for (int r = 0; r < world; ++r) g.push_back({r});
  return g;
}

// All 24 rank orders.
std::vector<std::string> all_orders() {
  std::vector<std::string> names = {"cp", "dp", "pp", "tp"};  // sorted for next_permutation
  std::vector<std::string> out;
  do {
    out.push_back(names[0] + "-" + names[1] + "-" + names[2] + "-" + names[3]);
  } while (std::next_permutation(names.begin(), names.end()));
  return out;
}

// Every (dp, tp, cp, pp) with product world.
std::vector<MeshSizes> factorisations(int world) {
  std::vector<MeshSizes> out;
  for (int dp = 1; dp <= world; ++dp)
    for (int tp = 1; tp <= world; ++tp)
      for (int cp = 1; cp <= world; ++cp)
        if (world % (dp * tp * cp) == 0) out.push_back(sizes(dp, tp, cp, world / (dp * tp * cp)));
  return out;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The dimension an order string names first (the fastest-varying one).
MeshDim first_dim(const std::string& order) {
  for (MeshDim d : kDims)
    if (order.rfind(usp::mesh_dim_name(d), 0) == 0) return d;
  FAIL("order " << order << " names no dimension first");
  return MeshDim::dp;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Groups of one kind partition the world: every rank in exactly one of them.
void check_partition(const Groups& gs, int world) {
  std::vector<int> seen(static_cast<std::size_t>(world), 0);
  for (const auto& g : gs)
    for (int r : g) {
      REQUIRE(r >= 0);
      REQUIRE(r < world);
      ++seen[static_cast<std::size_t>(r)];
    }
  for (int r = 0; r < world; ++r) REQUIRE(seen[static_cast<std::size_t>(r)] == 1);
}

}  // namespace

// ---- hand-worked layouts ---------------------------------------------------------------------

TEST_CASE("mesh: world 8, dp=tp=pp=2, default order tp-cp-dp-pp", "[core][mesh]") {
  const MeshLayout m(8, sizes(2, 2, 1, 2));
  CHECK(m.order() == "tp-cp-dp-pp");
  CHECK(groups(m, MeshDim::tp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(groups(m, MeshDim::dp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(groups(m, MeshDim::pp) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups(m, MeshDim::cp) == singletons(8));
  // rank 5 = tp 1 + 2·dp 0 + 4·pp 1
  CHECK(m.coords(5) == std::array<int, 4>{0, 1, 0, 1});  // indexed dp, tp, cp, pp
  CHECK(m.rank_of({1, 1, 0, 1}) == 7);
  CHECK(m.dp_cp_group(3) == std::vector<int>{1, 3});  // cp = 1: the dp group
}

TEST_CASE("mesh: world 8, dp=tp=pp=2, order dp-tp-cp-pp", "[core][mesh]") {
  const MeshLayout m(8, sizes(2, 2, 1, 2), "dp-tp-cp-pp");  // rank = dp + 2·tp + 4·pp
  CHECK(groups(m, MeshDim::dp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(groups(m, MeshDim::tp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(groups(m, MeshDim::pp) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups(m, MeshDim::cp) == singletons(8));
  CHECK(m.coords(6) == std::array<int, 4>{0, 1, 0, 1});
}

TEST_CASE("mesh: world 8, dp=tp=pp=2, order pp-dp-tp-cp", "[core][mesh]") {
  const MeshLayout m(8, sizes(2, 2, 1, 2), "pp-dp-tp-cp");  // rank = pp + 2·dp + 4·tp
  CHECK(groups(m, MeshDim::pp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(groups(m, MeshDim::dp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(groups(m, MeshDim::tp) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups(m, MeshDim::cp) == singletons(8));
  CHECK(m.coords(6) == std::array<int, 4>{1, 1, 0, 0});
}

TEST_CASE("mesh: world 16, all four dimensions 2", "[core][mesh]") {
  const MeshLayout m(16, sizes(2, 2, 2, 2));  // rank = tp + 2·cp + 4·dp + 8·pp
  CHECK(groups(m, MeshDim::tp) ==
        Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(groups(m, MeshDim::cp) ==
        Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(groups(m, MeshDim::dp) ==
        Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}});
  CHECK(groups(m, MeshDim::pp) ==
        Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}});
  // dp·cp replicas, cp fastest: (dp0 cp0, dp0 cp1, dp1 cp0, dp1 cp1)
  CHECK(distinct_groups(m, [&](int r) { return m.dp_cp_group(r); }) ==
        Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  CHECK(m.coords(13) == std::array<int, 4>{1, 1, 0, 1});
}

TEST_CASE("mesh: world 12, dp=3, tp=2, pp=2", "[core][mesh]") {
  SECTION("default order: rank = tp + 2·dp + 6·pp") {
    const MeshLayout m(12, sizes(3, 2, 1, 2));
    CHECK(groups(m, MeshDim::tp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}});
    CHECK(groups(m, MeshDim::dp) == Groups{{0, 2, 4}, {1, 3, 5}, {6, 8, 10}, {7, 9, 11}});
    CHECK(groups(m, MeshDim::pp) == Groups{{0, 6}, {1, 7}, {2, 8}, {3, 9}, {4, 10}, {5, 11}});
    CHECK(m.coords(9) == std::array<int, 4>{1, 1, 0, 1});
  }
  SECTION("order pp-tp-dp-cp: rank = pp + 2·tp + 4·dp") {
    const MeshLayout m(12, sizes(3, 2, 1, 2), "pp-tp-dp-cp");
    CHECK(groups(m, MeshDim::pp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}});
    CHECK(groups(m, MeshDim::tp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}});
    CHECK(groups(m, MeshDim::dp) == Groups{{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}});
  }
}

TEST_CASE("mesh: expert groups inside dp", "[core][mesh]") {
  SECTION("world 8, dp=4, tp=2, ep=2") {
    const MeshLayout m(8, sizes(4, 2, 1, 1, 2));  // rank = tp + 2·dp
    CHECK(distinct_groups(m, [&](int r) { return m.dp_cp_group(r); }) == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
    CHECK(distinct_groups(m, [&](int r) { return m.ep_group(r); }) ==
          Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
    CHECK(distinct_groups(m, [&](int r) { return m.ep_dp_group(r); }) ==
          Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
    CHECK(m.ep_rank(4) == 0);
    CHECK(m.ep_rank(6) == 1);
    CHECK(m.ep_rank(7) == 1);
  }
  SECTION("world 8, dp=2, cp=2, tp=2, ep=4: one expert group per replica") {
    const MeshLayout m(8, sizes(2, 2, 2, 1, 4));  // rank = tp + 2·cp + 4·dp
    CHECK(distinct_groups(m, [&](int r) { return m.ep_group(r); }) == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
    CHECK(distinct_groups(m, [&](int r) { return m.ep_dp_group(r); }) == singletons(8));
    CHECK(m.ep_rank(4) == 2);
  }
  SECTION("world 4, dp=2, cp=2, ep=2, order dp-cp-tp-pp: positions count cp fastest") {
    // rank = dp + 2·cp, but replica positions are cp + 2·dp: ranks 0, 2, 1, 3.
    const MeshLayout m(4, sizes(2, 1, 2, 1, 2), "dp-cp-tp-pp");
    CHECK(m.dp_cp_group(0) == std::vector<int>{0, 2, 1, 3});
    CHECK(distinct_groups(m, [&](int r) { return m.ep_group(r); }) == Groups{{0, 2}, {1, 3}});
    CHECK(distinct_groups(m, [&](int r) { return m.ep_dp_group(r); }) == Groups{{0, 1}, {2, 3}});
    CHECK(m.ep_rank(2) == 1);
    CHECK(m.ep_rank(1) == 0);
  }
}

TEST_CASE("mesh: a single rank is its own group everywhere", "[core][mesh]") {
  const MeshLayout m(1, MeshSizes{});
  for (MeshDim d : kDims) CHECK(m.group(0, d) == std::vector<int>{0});
  CHECK(m.ep_group(0) == std::vector<int>{0});
  CHECK(m.ep_dp_group(0) == std::vector<int>{0});
  CHECK(m.coords(0) == std::array<int, 4>{0, 0, 0, 0});
}

// ---- properties over many layouts ----------------------------------------------------------

TEST_CASE("mesh: group properties hold for every layout and order", "[core][mesh]") {
  const auto orders = all_orders();
  REQUIRE(orders.size() == 24);
  int layouts = 0;
  for (int world : {1, 2, 4, 6, 8, 12, 16}) {
    for (const MeshSizes& base : factorisations(world)) {
      for (const std::string& order : orders) {
        for (int ep : divisors(base.dp * base.cp)) {
          MeshSizes s = base;
          s.ep = ep;
          INFO("world " << world << " dp " << s.dp << " tp " << s.tp << " cp " << s.cp << " pp " << s.pp
                        << " ep " << ep << " order " << order);
          const MeshLayout m(world, s, order);
          ++layouts;

          // Coordinates are a bijection onto the box of sizes.
          std::set<std::array<int, 4>> all_coords;
          for (int r = 0; r < world; ++r) {
            const auto c = m.coords(r);
            for (MeshDim d : kDims) {
              REQUIRE(c[static_cast<int>(d)] >= 0);
              REQUIRE(c[static_cast<int>(d)] < s[d]);
              REQUIRE(m.coord(r, d) == c[static_cast<int>(d)]);
            }
            REQUIRE(m.rank_of(c) == r);
            all_coords.insert(c);
          }
          REQUIRE(static_cast<int>(all_coords.size()) == world);

          // The first dimension of the order varies fastest: its groups are consecutive ranks.
          const MeshDim fastest = first_dim(order);
          for (int r = 0; r < world; ++r) {
            const auto g = m.group(r, fastest);
            for (std::size_t i = 1; i < g.size(); ++i) REQUIRE(g[i] == g[i - 1] + 1);
          }

          for (MeshDim d : kDims) {
            for (int r = 0; r < world; ++r) {
              const auto g = m.group(r, d);
              REQUIRE(static_cast<int>(g.size()) == s[d]);
              REQUIRE(g[static_cast<std::size_t>(m.coord(r, d))] == r);
              for (std::size_t i = 0; i < g.size(); ++i) {
                // Members differ from r only along d, and agree on the group.
                auto c = m.coords(g[i]);
                REQUIRE(c[static_cast<int>(d)] == static_cast<int>(i));
                c[static_cast<int>(d)] = m.coord(r, d);
                REQUIRE(c == m.coords(r));
                REQUIRE(m.group(g[i], d) == g);
              }
            }
            check_partition(groups(m, d), world);
          }

          // Replica (dp·cp) and expert groups.
          check_partition(distinct_groups(m, [&](int r) { return m.dp_cp_group(r); }), world);
          check_partition(distinct_groups(m, [&](int r) { return m.ep_group(r); }), world);
          check_partition(distinct_groups(m, [&](int r) { return m.ep_dp_group(r); }), world);
          for (int r = 0; r < world; ++r) {
            const auto replica = m.dp_cp_group(r);
            REQUIRE(static_cast<int>(replica.size()) == s.dp * s.cp);
            for (int x : replica) {
              REQUIRE(m.coord(x, MeshDim::tp) == m.coord(r, MeshDim::tp));
              REQUIRE(m.coord(x, MeshDim::pp) == m.coord(r, MeshDim::pp));
            }
            const auto eg = m.ep_group(r);
            const auto edp = m.ep_dp_group(r);
            REQUIRE(static_cast<int>(eg.size()) == ep);
            REQUIRE(static_cast<int>(edp.size()) == s.dp * s.cp / ep);
            REQUIRE(eg[static_cast<std::size_t>(m.ep_rank(r))] == r);
            REQUIRE(contains(edp, r));
            for (int x : eg) REQUIRE(contains(replica, x));
            for (int x : edp) {
              REQUIRE(contains(replica, x));
              REQUIRE(m.ep_rank(x) == m.ep_rank(r));
            }
            // An ep group and an expert-dp group meet in exactly one rank.
            int common = 0;
            for (int x : eg) common += contains(edp, x) ? 1 : 0;
            REQUIRE(common == 1);
          }
        }
      }
    }
  }
  CHECK(layouts > 1000);
}

// ---- invalid layouts ---------------------------------------------------------------------

TEST_CASE("mesh: invalid layouts are refused with a clear message", "[core][mesh]") {
  using Catch::Matchers::Contains;
  SECTION("sizes that do not multiply to the world") {
    CHECK_THROWS_AS(MeshLayout(6, sizes(2, 2, 1, 1)), usp::UsageError);
    CHECK_THROWS_WITH(MeshLayout(6, sizes(2, 2, 1, 1)),
                      Contains("dp·tp·cp·pp = 2·2·1·1 = 4 does not equal the world size 6"));
    CHECK_THROWS_AS(MeshLayout(4, sizes(2, 2, 2, 1)), usp::UsageError);
    // Sizes whose product overflows 32 bits are not mistaken for a match.
    CHECK_THROWS_AS(MeshLayout(1, sizes(65536, 65536, 1, 1)), usp::UsageError);
  }
  SECTION("sizes below 1") {
    CHECK_THROWS_AS(MeshLayout(4, sizes(0, 4, 1, 1)), usp::UsageError);
    CHECK_THROWS_WITH(MeshLayout(4, sizes(4, 0, 1, 1)), Contains("tp = 0"));
    CHECK_THROWS_AS(MeshLayout(4, sizes(-1, -4, 1, 1)), usp::UsageError);
    CHECK_THROWS_AS(MeshLayout(4, sizes(4, 1, 1, 1, 0)), usp::UsageError);
    CHECK_THROWS_AS(MeshLayout(0, sizes(1, 1, 1, 1)), usp::UsageError);
  }
  SECTION("ep not dividing dp·cp") {
    CHECK_THROWS_AS(MeshLayout(4, sizes(4, 1, 1, 1, 3)), usp::UsageError);
    CHECK_THROWS_WITH(MeshLayout(4, sizes(4, 1, 1, 1, 3)), Contains("ep = 3 must divide dp·cp = 4"));
    // ep lives inside dp·cp: tp ranks do not count towards it.
    CHECK_THROWS_AS(MeshLayout(4, sizes(2, 2, 1, 1, 4)), usp::UsageError);
    CHECK_NOTHROW(MeshLayout(4, sizes(2, 1, 2, 1, 4)));
  }
  SECTION("order strings that are not a permutation of dp, tp, cp, pp") {
    CHECK_THROWS_WITH(MeshLayout(4, sizes(2, 2, 1, 1), "tp-dp-pp"),
                      Contains("mesh order 'tp-dp-pp' must name each of dp, tp, cp, pp exactly once"));
    for (const char* bad : {"", "tp-dp-pp", "tp-tp-dp-pp", "tp-cp-dp-pp-tp", "tp-cp-dp-pp-", "-tp-cp-dp-pp",
                            "tp--cp-dp-pp", "TP-cp-dp-pp", "tp_cp_dp_pp", "tp-cp-dp-ep", "tpcpdppp"}) {
      INFO("order '" << bad << "'");
      CHECK_THROWS_AS(MeshLayout(4, sizes(2, 2, 1, 1), bad), usp::UsageError);
    }
    for (const std::string& good : all_orders()) CHECK_NOTHROW(MeshLayout(4, sizes(2, 2, 1, 1), good));
  }
}

// ---- the communicators (under mpirun, any world size) --------------------------------------

namespace {

// The layouts a world of n ranks can take, in the same order on every rank (the splits are
// collective): every factorisation, each in two rank orders, with the smallest ep > 1 that
// the replica allows.
std::vector<std::pair<MeshSizes, std::string>> layouts_for(int n) {
  std::vector<std::pair<MeshSizes, std::string>> out;
  for (MeshSizes s : factorisations(n)) {
    const auto ds = divisors(s.dp * s.cp);
    s.ep = ds.size() > 1 ? ds[1] : 1;
    out.emplace_back(s, "tp-cp-dp-pp");
    out.emplace_back(s, "pp-dp-cp-tp");
  }
  return out;
}

// The communicator's membership equals the layout's group, and it really connects them:
// an all-reduce of the world ranks sums exactly the group's ranks.
void check_comm(usp::Communicator& comm, const std::vector<int>& group, int me) {
  // CHECK, not REQUIRE: a rank that stopped here would leave the others in the all-reduce.
  CHECK(comm.size() == static_cast<int>(group.size()));
  const auto pos = std::find(group.begin(), group.end(), me) - group.begin();
  CHECK(comm.rank() == static_cast<int>(pos));
  CHECK(comm.world_ranks() == group);
  auto t = usp::Tensor::from_floats({static_cast<float>(me), 1.0f}, {2});
  comm.all_reduce(t);
  const auto v = t.to_floats();
  CHECK(v[0] == static_cast<float>(std::accumulate(group.begin(), group.end(), 0)));
  CHECK(v[1] == static_cast<float>(group.size()));
}

}  // namespace

TEST_CASE("mesh: group communicators match the layout", "[core][mesh][mpi]") {
  usp::Communicator& world = usp::testing::world();
  const int n = world.size(), me = world.rank();
  for (const auto& [s, order] : layouts_for(n)) {
    INFO("world " << n << " dp " << s.dp << " tp " << s.tp << " cp " << s.cp << " pp " << s.pp << " ep "
                  << s.ep << " order " << order << " rank " << me);
    const MeshLayout layout(n, s, order);
    usp::Mesh mesh(world, layout);
    REQUIRE(mesh.rank() == me);
    for (MeshDim d : kDims) {
      CHECK(mesh.coord(d) == layout.coord(me, d));
      check_comm(mesh.group(d), layout.group(me, d), me);
    }
    check_comm(mesh.dp(), layout.group(me, MeshDim::dp), me);
    check_comm(mesh.tp(), layout.group(me, MeshDim::tp), me);
    check_comm(mesh.cp(), layout.group(me, MeshDim::cp), me);
    check_comm(mesh.pp(), layout.group(me, MeshDim::pp), me);
    check_comm(mesh.dp_cp(), layout.dp_cp_group(me), me);
    check_comm(mesh.ep(), layout.ep_group(me), me);
    check_comm(mesh.ep_dp(), layout.ep_dp_group(me), me);
  }
}

TEST_CASE("mesh: a layout for another world size is refused on every rank", "[core][mesh][mpi]") {
  usp::Communicator& world = usp::testing::world();
  const MeshLayout wrong(world.size() + 1, sizes(world.size() + 1, 1, 1, 1));
  CHECK_THROWS_AS(usp::Mesh(world, wrong), usp::UsageError);
}
