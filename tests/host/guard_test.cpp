// The slot guard's state machine, alone and replaying planner orders.

#include <deque>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/plan/planner.hpp"

using graphpool::frame_label;
using graphpool::slot_guard;
using graphpool::testing::contains_text;
using namespace graphpool::plan;

namespace {

// Replays `order` against `guard` as a graph bank would: each forward of (chunk, microbatch) claims
// the arenas of its frames under `frames_plan`; each backward releases them.
void replay(slot_guard& guard, const plan& frames_plan, const schedule& order, const std::string& branch) {
  std::vector<std::deque<int>> pending(static_cast<std::size_t>(frames_plan.chunks));
  std::vector<int> next(static_cast<std::size_t>(frames_plan.chunks), 0);
  for (const event& e : order.events()) {
    const int microbatch = e.microbatch;
    const int slot = microbatch % frames_plan.slots;
    for (const planned_frame& f : frames_plan.frames) {
      if (f.chunk != e.chunk || f.slot != slot) continue;
      const frame_label label{e.chunk, microbatch, f.layer, branch};
      if (e.kind == phase::forward) {
        guard.claim({f.arena}, label);
      } else {
        guard.release({f.arena}, label);
      }
    }
  }
}

}  // namespace

TEST_CASE("the guard lets a frame reclaim its own arenas and refuses another frame", "[guard]") {
  slot_guard guard(true);
  const frame_label a{0, 0, 0, "cp1"};
  const frame_label b{0, 2, 0, "cp1"};
  guard.claim({3, 4}, a);
  guard.claim({3}, a);  // the same frame again (a re-launch of its forward) is fine
  CHECK(guard.owned() == 2);
  CHECK_THROWS_WITH(guard.claim({5, 4}, b),
                    contains_text("the launch of chunk 0 microbatch 2 layer 0 (branch cp1) would reuse arena 4, still "
                                  "owned by chunk 0 microbatch 0 layer 0 (branch cp1)"));
  CHECK(guard.owned() == 2);  // all or nothing: arena 5 was not taken
  CHECK_THROWS_WITH(guard.release({3}, b), contains_text("releases arena 3, which chunk 0 microbatch 0 layer 0 (branch cp1) owns"));
  CHECK_THROWS_WITH(guard.release({9}, a), contains_text("releases arena 9, which no frame owns"));
  guard.release({3, 4}, a);
  CHECK(guard.owned() == 0);
  guard.claim({4}, b);
  guard.reset();
  CHECK(guard.owned() == 0);
}

TEST_CASE("a disabled guard checks nothing", "[guard]") {
  slot_guard guard(false);
  CHECK_FALSE(guard.enabled());
  guard.claim({1}, {0, 0, 0, "a"});
  guard.claim({1}, {0, 1, 0, "b"});
  guard.release({7}, {0, 0, 0, "a"});
  CHECK(guard.owned() == 0);
}

TEST_CASE("every valid schedule passes the guard under the planner's arenas", "[guard][planner]") {
  for (int rank = 0; rank < 4; ++rank) {
    problem p;
    for (int m = 4; m <= 32; m += 4) p.schedules.push_back(schedule::interleaved(4, rank, m, 2, 4));
    p.layers_per_chunk = {2};
    p.branches = {{"cp1", 1 << 20, 0}, {"cp2", 1 << 19, 0}};
    const plan arenas = make_plan(p, assignment::coloring);
    for (const schedule& s : p.schedules) {
      slot_guard guard(true);
      INFO(s.name());
      CHECK_NOTHROW(replay(guard, arenas, s, "cp1"));
      CHECK(guard.owned() == 0);
      CHECK_NOTHROW(replay(guard, arenas, s, "cp2"));  // another branch, after the first finished
    }
  }
}

TEST_CASE("the guard catches a planted violation: a schedule the plan was not made for", "[guard][planner]") {
  problem p;
  p.schedules = {schedule::one_f_one_b(4, 0, 2)};  // 2 slots suffice for M = 2
  p.layers_per_chunk = {1};
  p.branches = {{"cp1", 1 << 20, 0}};
  const plan arenas = make_plan(p, assignment::coloring);
  REQUIRE(arenas.slots == 2);
  slot_guard guard(true);
  // M = 8 keeps 4 microbatches in flight: microbatch 2 wraps onto slot 0 while microbatch 0 lives.
  CHECK_THROWS_WITH(replay(guard, arenas, schedule::one_f_one_b(4, 0, 8), "cp1"),
                    contains_text("the launch of chunk 0 microbatch 2 layer 0 (branch cp1) would reuse arena"));
}

TEST_CASE("the guard catches another branch reusing a live frame's arena", "[guard]") {
  slot_guard guard(true);
  guard.claim({0}, {1, 5, 0, "cp1"});
  CHECK_THROWS_WITH(guard.claim({0}, {1, 5, 0, "cp2"}),
                    contains_text("(branch cp2) would reuse arena 0, still owned by chunk 1 microbatch 5 layer 0 (branch cp1)"));
}
