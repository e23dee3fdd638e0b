#pragma once
// What every search that lowers a given layout (ruin and recreate, windows, the rising search at heights
// under it) must do on random layouts, checked the same way for each (tests only).

#include <cstddef>
#include <random>
#include <vector>

#include "catch.hpp"
#include "frame_layouts.hpp"

namespace graphpool::testing {

// Of the random layouts check_lowering drew: those above their floor, and those it lowered.
struct lowering_tally {
  int above_floor = 0;
  int lowered = 0;
};

// `lower(start, floor)` on `rounds` random layouts drawn from `seed` (random_layout; floor: their most bytes
// alive at once): each result a layout of the frames under the start's top and not below the floor, the
// same on a second call, and the start itself where that was at the floor. `also(start, floor, lowered)`
// then checks what more a search promises.
template <class Lower, class Also>
lowering_tally check_lowering(unsigned seed, int rounds, Lower&& lower, Also&& also) {
  std::mt19937 random(seed);
  lowering_tally tally;
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    const start_layout start = random_layout(random);
    const std::size_t floor = most_alive(start.frames);
    const std::size_t top = plan::detail::top_of(start.frames, start.offsets);
    REQUIRE(check_layout(start.frames, start.offsets, top).empty());
    const std::vector<std::size_t> offsets = lower(start, floor);
    CHECK(check_layout(start.frames, offsets, top).empty());
    const std::size_t after = plan::detail::top_of(start.frames, offsets);
    CHECK(after >= floor);
    if (top == floor) CHECK(offsets == start.offsets);  // nothing to lower
    CHECK(lower(start, floor) == offsets);              // deterministic
    also(start, floor, offsets);
    tally.above_floor += top > floor ? 1 : 0;
    tally.lowered += after < top ? 1 : 0;
  }
  return tally;
}

template <class Lower>
lowering_tally check_lowering(unsigned seed, int rounds, Lower&& lower) {
  return check_lowering(seed, rounds, lower, [](const start_layout&, std::size_t, const std::vector<std::size_t>&) {});
}

}  // namespace graphpool::testing
