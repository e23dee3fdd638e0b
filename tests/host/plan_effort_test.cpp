// Issue 8's planning-time target and the schedule rule's default budget on the heaviest plan the
// issue names (PP 8, VPP 4, M = 1..128, 8 layers, 4 branches), with layers of unequal sizes: such
// unions once took minutes; every search is now bounded by effort, and the budget still holds.

#include <chrono>
#include <cstddef>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/planner.hpp"
#include "checked_plan.hpp"

using namespace graphpool::plan;
using graphpool::testing::checked_plan;

// Time is checked in optimized builds without a sanitizer only (a debug or sanitized build is several
// times slower, and says nothing about what a user runs).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRAPHPOOL_PLAN_TIMED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GRAPHPOOL_PLAN_TIMED 0
#endif
#endif
#if !defined(GRAPHPOOL_PLAN_TIMED) && defined(NDEBUG)
#define GRAPHPOOL_PLAN_TIMED 1
#elif !defined(GRAPHPOOL_PLAN_TIMED)
#define GRAPHPOOL_PLAN_TIMED 0
#endif

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Issue 8's target for the plan below is 100 ms; a shared CI machine running other tests beside this
// one gets ten times that. Unequal layers are not the issue's target: their searches stop at their
// effort bounds, and a plan without a copy limit holds hundreds of copies (they once took minutes) and
// replays its counts twice where one laid out by itself rises above the anchor (as blocks, then as
// frames where lower). That took 6.9 s on one 2-core machine and 16 s on another (the same code, a
// slower machine: 2.7 s with blocks only on the first); the bound catches a search that runs away, not
// a machine's speed.
constexpr double issue_target_ms = 100.0;
constexpr double machine_slack = 10.0;
constexpr double unequal_layers_slack = 250.0;

// PP 8, VPP 4, every M = 1..128 of one rank, 8 layers per chunk, 4 branches; with `unequal`, some layers
// of some chunks save much more or less than the others (as the planner benchmark's heterogeneous sizes).
problem issue_target(int rank, bool unequal) {
  problem p;
  for (int m = 1; m <= 128; ++m) p.schedules.push_back(schedule::interleaved(8, rank, m, 4, 8));
  p.layers_per_chunk = {8};
  p.branches = {{"cp1", 96 * MiB, 16 * MiB}, {"cp2", 52 * MiB, 16 * MiB}, {"cp4", 27 * MiB, 16 * MiB},
                {"cp8", 15 * MiB, 16 * MiB}};
  if (unequal) {
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 8; ++l) {
        if ((c + l) % 3 == 0) p.overrides.push_back({c, l, "cp1", static_cast<std::size_t>(40 + 37 * (c + 1)) * MiB});
        if ((c * 5 + l) % 4 == 1) p.overrides.push_back({c, l, "cp2", static_cast<std::size_t>(100 + 13 * l) * MiB});
      }
    }
  }
  return p;
}

double planning_ms(const problem& p, plan& result) {
  const auto start = std::chrono::steady_clock::now();
  result = make_plan(p, assignment::offsets);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("the schedule rule plans issue 8's largest union quickly, within the default budget", "[plan][slot_map][effort]") {
  // Debug and sanitized builds (untimed, many times slower) plan the heaviest case only.
  const std::vector<int> ranks = GRAPHPOOL_PLAN_TIMED ? std::vector<int>{0, 4} : std::vector<int>{4};
  const std::vector<bool> layers = GRAPHPOOL_PLAN_TIMED ? std::vector<bool>{false, true} : std::vector<bool>{true};
  for (int rank : ranks) {
    for (bool unequal : layers) {
      INFO("rank " << rank << (unequal ? ", unequal layers" : ", equal layers"));
      problem p = issue_target(rank, unequal);
      plan by_mod;
      const double mod_ms = planning_ms(p, by_mod);
      p.rule = slot_rule::schedule;
      plan mapped;
      const double mapped_ms = planning_ms(p, mapped);
      p.max_copies = 0;
      plan unlimited;
      const double unlimited_ms = planning_ms(p, unlimited);
      INFO("m mod S " << mod_ms << " ms, schedule rule " << mapped_ms << " ms, no copy limit " << unlimited_ms << " ms");
      // The default budget: copies at most twice m mod S's, footprint never above m mod S's.
      CHECK(mapped.slots <= 2 * by_mod.slots);
      CHECK(mapped.saved.footprint_bytes <= by_mod.saved.footprint_bytes);
      CHECK(unlimited.saved.footprint_bytes >= unlimited.saved.live_bound_bytes);
#if GRAPHPOOL_PLAN_TIMED
      const double limit_ms = issue_target_ms * (unequal ? unequal_layers_slack : machine_slack);
      CHECK(mod_ms <= limit_ms);
      CHECK(mapped_ms <= limit_ms);
      CHECK(unlimited_ms <= limit_ms);
#endif
    }
  }
  // The verifier replays all 128 schedules: once, on the heaviest case.
  problem p = issue_target(4, true);
  p.rule = slot_rule::schedule;
  checked_plan(p);
}
