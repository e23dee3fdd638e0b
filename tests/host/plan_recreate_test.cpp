// Ruin and recreate (recreate_layout.hpp): a layout lowered by taking a few frames out and putting them
// back, many times. Valid layouts, never higher than the one it was given nor below the floor, the same
// for the same input, and what it buys the schedule slot rule with no copy limit: an interleaved schedule
// of unequal chunks laid out 4.2% above the live bound comes under 3%.

#include <cstddef>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/recreate_layout.hpp"
#include "graphpool/plan/rising_layout.hpp"
#include "frame_layouts.hpp"
#include "lowering_check.hpp"

using namespace graphpool::plan;
using graphpool::testing::check_layout;
using graphpool::testing::check_lowering;
using graphpool::testing::lowering_tally;
using graphpool::testing::most_alive;
using graphpool::testing::start_layout;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

TEST_CASE("ruin and recreate keeps random layouts valid, never higher nor below the floor, and lowers some",
          "[plan][recreate]") {
  const lowering_tally tally = check_lowering(5, 300, [](const start_layout& start, std::size_t floor) {
    return detail::recreate_lower(start.frames, start.offsets, floor, 200'000);
  });
  INFO(tally.lowered << " of " << tally.above_floor << " layouts above the floor lowered");
  CHECK(tally.lowered * 2 > tally.above_floor);
}

TEST_CASE("ruin and recreate brings frames stacked in a column, none alive together, down to the floor",
          "[plan][recreate]") {
  std::vector<detail::frame_interval> frames;
  std::vector<std::size_t> offsets;
  std::size_t stacked = 0;
  for (std::size_t f = 0; f < 12; ++f) {
    frames.push_back({2 * f, 2 * f + 1, (1 + f % 5) * MiB});
    offsets.push_back(stacked);
    stacked += frames.back().bytes;
  }
  const std::vector<std::size_t> lowered = detail::recreate_lower(frames, offsets, 5 * MiB, 1'000'000);
  CHECK(check_layout(frames, lowered, 5 * MiB).empty());
  CHECK(detail::top_of(frames, lowered) == 5 * MiB);
  CHECK(detail::recreate_lower(frames, offsets, 5 * MiB, 0) == offsets);  // no effort: unchanged
}

TEST_CASE("ruin and recreate lowers PP 4 rank 1 VPP 4 M 24 of unequal chunks from 4.2% above the live bound to "
          "under 3%", "[plan][recreate]") {
  // Chunks of 77, 40, 40 and 188 MiB (as the planner-quality corpus's heterogeneous sizes, one layer), laid
  // out by the rising search under 1520 MiB: 1518 MiB, 1.042 of the 1457 MiB live bound. (make_plan's sweeps
  // and orders ended at 1512 MiB, which ruin and recreate brought under 3% too, before rising_lower took it
  // to 1466 MiB ahead of ruin and recreate.)
  const std::vector<std::vector<std::size_t>> frame_bytes = {{77 * MiB}, {40 * MiB}, {40 * MiB}, {188 * MiB}};
  const std::vector<detail::frame_interval> frames =
      detail::frames_of(frame_bytes, detail::lifetimes_of(schedule::interleaved(4, 1, 24, 4, 4)));
  const std::size_t live = most_alive(frames);
  REQUIRE(live == 1457 * MiB);
  const std::vector<std::size_t> start = detail::rising_layout(frames, 1520 * MiB, 200'000'000);
  REQUIRE_FALSE(start.empty());
  const std::size_t top = detail::top_of(frames, start);
  INFO("start " << top / MiB << " MiB");
  CHECK(top * 1000 > live * 1040);
  const std::vector<std::size_t> lowered = detail::recreate_lower(frames, start, live, recreate_effort);
  CHECK(check_layout(frames, lowered, top).empty());
  INFO("lowered " << detail::top_of(frames, lowered) / MiB << " MiB");
  CHECK(detail::top_of(frames, lowered) * 100 <= live * 103);
}
