// Windows of time laid out anew (window_layout.hpp): the conflict-driven search with frames pinned holds
// them where they are and lays the others out around them (a layout where the pinned frames leave room, a
// proof where they leave none); lowering by windows keeps layouts valid, never rises nor passes the
// floor, and is deterministic; and what it buys the schedule slot rule with no copy limit: an interleaved
// schedule of random chunk sizes every search before it leaves 8.6% above the live bound comes under 5%.

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/learned_layout.hpp"
#include "graphpool/plan/learned_lower.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/window_layout.hpp"
#include "checked_plan.hpp"
#include "frame_layouts.hpp"
#include "lowering_check.hpp"

using namespace graphpool::plan;
using graphpool::testing::check_layout;
using graphpool::testing::checked_plan;
using graphpool::testing::most_alive;
using graphpool::testing::one_layer_chunks;
using graphpool::testing::check_lowering;
using graphpool::testing::lowering_tally;
using graphpool::testing::random_layout;
using graphpool::testing::start_layout;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// The top of the frames `pinned` leaves free (unpinned) at `offsets`.
std::size_t free_top(const std::vector<detail::frame_interval>& frames, const std::vector<std::size_t>& offsets,
                     const std::vector<std::size_t>& pinned) {
  std::size_t top = 0;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    if (pinned[f] == detail::unpinned) top = std::max(top, offsets[f] + frames[f].bytes);
  }
  return top;
}

}  // namespace

TEST_CASE("the conflict-driven search holds pinned frames and lays the others out under the height around them",
          "[plan][window]") {
  std::mt19937 random(23);
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    const start_layout start = random_layout(random);
    const std::vector<detail::frame_interval>& frames = start.frames;
    // A good layout to pin from: the random one lowered as far as the search goes.
    const std::vector<std::size_t> layout = detail::learned_lower(frames, start.offsets, most_alive(frames), 2'000'000);
    std::vector<std::size_t> pinned(frames.size(), detail::unpinned);
    for (std::size_t f = 0; f < frames.size(); ++f) {
      if (random() % 2 == 0) pinned[f] = layout[f];
    }
    // The free frames fit under their own top in `layout`: the search must find a layout there.
    const std::size_t height = free_top(frames, layout, pinned);
    detail::order_search search(frames);
    std::vector<std::size_t> offsets;
    std::size_t effort = 20'000'000;
    REQUIRE(search.under(height, layout, effort, offsets, 0, &pinned) == detail::order_verdict::found);
    CHECK(check_layout(frames, offsets, detail::top_of(frames, layout)).empty());
    CHECK(free_top(frames, offsets, pinned) <= height);
    for (std::size_t f = 0; f < frames.size(); ++f) {
      if (pinned[f] != detail::unpinned) CHECK(offsets[f] == pinned[f]);
    }
    // Without a hint too (the hint only orders its choices).
    effort = 20'000'000;
    REQUIRE(search.under(height, {}, effort, offsets, 0, &pinned) == detail::order_verdict::found);
    CHECK(check_layout(frames, offsets, detail::top_of(frames, layout)).empty());
    CHECK(free_top(frames, offsets, pinned) <= height);
  }
}

TEST_CASE("the conflict-driven search proves where pinned frames leave no room", "[plan][window]") {
  // A pinned at [0, 6), B pinned at [10, 14) (above the height: pinned frames may be), C free, 5 units,
  // alive with both: under 10 it has no room (the gap between A and B is 4), under 11 it sits on A.
  const std::vector<detail::frame_interval> frames = {{0, 4, 6 * MiB}, {0, 4, 4 * MiB}, {1, 3, 5 * MiB}};
  const std::vector<std::size_t> pinned = {0, 10 * MiB, detail::unpinned};
  detail::order_search search(frames);
  std::vector<std::size_t> offsets;
  std::size_t effort = 1'000'000;
  CHECK(search.under(10 * MiB, {}, effort, offsets, 0, &pinned) == detail::order_verdict::none);
  // Under 11 there is still no room: C needs [6, 11), which meets B at 10.
  effort = 1'000'000;
  CHECK(search.under(11 * MiB, {}, effort, offsets, 0, &pinned) == detail::order_verdict::none);
  // B moved up to 11: C fits between, on A.
  const std::vector<std::size_t> higher = {0, 11 * MiB, detail::unpinned};
  effort = 1'000'000;
  REQUIRE(search.under(11 * MiB, {}, effort, offsets, 0, &higher) == detail::order_verdict::found);
  CHECK(offsets == std::vector<std::size_t>{0, 11 * MiB, 6 * MiB});
  // A free frame alike a pinned one (same lifetime and bytes) is not ordered below it by symmetry.
  const std::vector<detail::frame_interval> twins = {{0, 4, 3 * MiB}, {0, 4, 3 * MiB}};
  const std::vector<std::size_t> first_up = {3 * MiB, detail::unpinned};
  detail::order_search twin_search(twins);
  effort = 1'000'000;
  REQUIRE(twin_search.under(6 * MiB, {}, effort, offsets, 0, &first_up) == detail::order_verdict::found);
  CHECK(offsets == std::vector<std::size_t>{3 * MiB, 0});
}

TEST_CASE("lowering by windows keeps random layouts valid, never higher nor below the floor, and lowers some",
          "[plan][window]") {
  const lowering_tally tally = check_lowering(
      9, 200,
      [](const start_layout& start, std::size_t floor) {
        return detail::window_lower(start.frames, start.offsets, floor, 5'000'000);
      },
      [](const start_layout& start, std::size_t floor, const std::vector<std::size_t>& lowered) {
        const std::size_t top = detail::top_of(start.frames, start.offsets);
        CHECK(detail::window_lower(start.frames, start.offsets, floor, 0) == start.offsets);  // no effort: unchanged
        const std::vector<std::size_t> seeded =
            detail::window_lower(start.frames, start.offsets, floor, 5'000'000, detail::window_retry_seeds);
        CHECK(check_layout(start.frames, seeded, top).empty());
        CHECK(detail::top_of(start.frames, seeded) >= floor);
        const std::vector<std::size_t> rounds =
            detail::window_rounds_lower(start.frames, start.offsets, floor, 5'000'000, 200'000, 3);
        CHECK(check_layout(start.frames, rounds, top).empty());
        // Its first round is window_lower's.
        CHECK(detail::top_of(start.frames, rounds) <= detail::top_of(start.frames, lowered));
      });
  INFO(tally.lowered << " of " << tally.above_floor << " layouts above the floor lowered");
  CHECK(tally.lowered * 2 > tally.above_floor);
}

TEST_CASE("windows bring PP 8 rank 5 VPP 4 M 128 of random chunk sizes from 8.6% above the live bound under 5%",
          "[plan][window]") {
  // Chunks of 247, 259, 303 and 132 MiB (a case of graphpool_bench_planner_quality --random-sizes 1:48): every
  // search before the windows ends at 8367 MiB, 1.086 of the 7707 MiB live bound.
  const problem p = one_layer_chunks(schedule::interleaved(8, 5, 128, 4, 8),
                                     {247 * MiB, 259 * MiB, 303 * MiB, 132 * MiB});
  const plan result = checked_plan(p);
  INFO("footprint " << result.saved.footprint_bytes / MiB << " MiB, live bound " << result.saved.live_bound_bytes / MiB
                    << " MiB");
  CHECK(result.saved.live_bound_bytes == 7707 * MiB);
  CHECK(result.saved.footprint_bytes * 100 <= result.saved.live_bound_bytes * 105);
}

TEST_CASE("the last pass of windows, three seeds each, brings PP 8 rank 3 VPP 4 M 128 from 1.0773 to 1.0741",
          "[plan][window]") {
  // Chunks of 302, 147, 202 and 276 MiB (a case of --random-sizes 1:48): three rounds of windows with one seed
  // and ruin and recreate end at 8511 MiB of the 7900 MiB live bound; the windows they leave undecided,
  // tried again with seeds 1 and 2, settle at 8485 MiB.
  const problem p = one_layer_chunks(schedule::interleaved(8, 3, 128, 4, 8),
                                     {302 * MiB, 147 * MiB, 202 * MiB, 276 * MiB});
  const plan result = checked_plan(p);
  INFO("footprint " << result.saved.footprint_bytes / MiB << " MiB, live bound " << result.saved.live_bound_bytes / MiB
                    << " MiB");
  CHECK(result.saved.live_bound_bytes == 7900 * MiB);
  CHECK(result.saved.footprint_bytes <= 8485 * MiB);
}
