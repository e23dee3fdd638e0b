// The slot guard's state machine on its own (variant_graphs_test.cpp drives it through real launches).

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "catch.hpp"
#include "graphpool/capture/slot_guard.hpp"

using namespace graphpool;
using graphpool::testing::contains_text;

namespace {
frame_label label(std::uint32_t chunk, int microbatch, std::uint32_t layer, std::uint32_t branch) {
  return frame_label{chunk_id{chunk}, microbatch, layer_id{layer}, branch_id{branch}};
}
}  // namespace

TEST_CASE("the guard refuses overlapping bytes of another live frame and lets disjoint ones through", "[guard]") {
  slot_guard guard(true, {"cp1", "cp2"});
  const frame_label a = label(0, 0, 0, 0);
  const frame_label b = label(0, 2, 0, 0);
  guard.claim(a, {arena_id{0}, 0, 100});
  guard.claim(a, {arena_id{0}, 0, 100});  // the same frame again (a re-launch of its forward) changes nothing
  CHECK(guard.live() == 1);
  guard.claim(b, {arena_id{0}, 100, 50});  // touching, not overlapping
  guard.claim(label(0, 3, 0, 0), {arena_id{1}, 0, 100});  // another arena
  CHECK_THROWS_WITH(guard.claim(label(1, 5, 1, 1), {arena_id{0}, 99, 2}),
                    contains_text("slot guard: the forward of chunk 1 microbatch 5 layer 1 (branch cp2) would overwrite "
                                  "arena 0 bytes [99, 101), which overlaps arena 0 bytes [0, 100) still held by chunk 0 "
                                  "microbatch 0 layer 0 (branch cp1)"));
  CHECK_NOTHROW(guard.check_claim(label(1, 5, 1, 1), {arena_id{0}, 150, 10}));
  CHECK(guard.live() == 3);  // nothing was claimed by the refused forward
  CHECK_NOTHROW(guard.claim(label(1, 5, 1, 1), {arena_id{0}, 0, 0}));  // zero bytes overlap nothing
}

TEST_CASE("the guard tells frames apart by chunk, microbatch, layer and branch", "[guard]") {
  slot_guard guard(true);
  guard.claim(label(0, 0, 0, 0), {arena_id{0}, 0, 8});
  for (const frame_label& other : {label(1, 0, 0, 0), label(0, 1, 0, 0), label(0, 0, 1, 0), label(0, 0, 0, 1)}) {
    CHECK_THROWS_WITH(guard.check_release(other), contains_text("has no live forward"));
    CHECK_THROWS_WITH(guard.check_claim(other, {arena_id{0}, 4, 8}), contains_text("would overwrite arena 0"));
  }
  CHECK_THROWS_WITH(guard.release(label(0, 0, 1, 0)),
                    contains_text("slot guard: the backward of chunk 0 microbatch 0 layer 1 (branch 0) has no live forward"));
  guard.release(label(0, 0, 0, 0));
  CHECK(guard.live() == 0);
  CHECK_THROWS_WITH(guard.release(label(0, 0, 0, 0)), contains_text("or its backward already did"));
}

TEST_CASE("unclaim and reset forget frames; a disabled guard checks nothing", "[guard]") {
  slot_guard guard(true);
  guard.claim(label(0, 0, 0, 0), {arena_id{0}, 0, 8});
  guard.claim(label(0, 1, 0, 0), {arena_id{0}, 8, 8});
  guard.unclaim(label(0, 0, 0, 0));
  guard.unclaim(label(0, 7, 0, 0));  // not live: nothing happens
  CHECK(guard.live() == 1);
  guard.reset();
  CHECK(guard.live() == 0);

  slot_guard off(false);
  CHECK_FALSE(off.enabled());
  off.claim(label(0, 0, 0, 0), {arena_id{0}, 0, 8});
  off.claim(label(0, 1, 0, 0), {arena_id{0}, 0, 8});
  off.release(label(0, 9, 0, 0));
  CHECK(off.live() == 0);
}

TEST_CASE("GRAPHPOOL_SLOT_DEBUG asks for the guard when set to anything but empty or 0, as the Python package reads it",
          "[guard]") {
  for (const auto& [value, on] : {std::pair<const char*, bool>{"1", true}, {"yes", true}, {"0", false}, {"", false}}) {
    INFO(value);
    REQUIRE(setenv("GRAPHPOOL_SLOT_DEBUG", value, 1) == 0);
    CHECK(slot_debug_requested() == on);
  }
  REQUIRE(unsetenv("GRAPHPOOL_SLOT_DEBUG") == 0);
  CHECK_FALSE(slot_debug_requested());
}

TEST_CASE("a failed re-launch of a live frame's forward keeps the claim of the forward that ran", "[guard][errors]") {
  slot_guard guard(true);
  const frame_label a = label(0, 0, 0, 0);
  guard.guarded_forward(a, {arena_id{0}, 0, 8}, [] {});
  CHECK_THROWS_WITH(guard.guarded_forward(a, {arena_id{0}, 0, 8}, [] { throw std::runtime_error("launch failed"); }),
                    contains_text("launch failed"));
  CHECK(guard.live() == 1);
  CHECK_THROWS_WITH(guard.claim(label(0, 1, 0, 0), {arena_id{0}, 4, 8}), contains_text("would overwrite"));
  guard.guarded_backward(a, std::nullopt, [] {});
  CHECK(guard.live() == 0);
  // A first forward whose launch fails still holds nothing.
  CHECK_THROWS(guard.guarded_forward(a, {arena_id{0}, 0, 8}, [] { throw std::runtime_error("launch failed"); }));
  CHECK(guard.live() == 0);
}

TEST_CASE("a backward whose forward is not live names the live frame holding its bytes, given its range",
          "[guard][errors]") {
  slot_guard guard(true, {"cp1", "cp2"});
  guard.claim(label(0, 0, 0, 0), {arena_id{0}, 0, 8});
  CHECK_THROWS_WITH(guard.check_release(label(0, 0, 0, 1), memory_range{arena_id{0}, 0, 8}),
                    contains_text("has no live forward: it never ran, or its backward already did; its bytes (arena 0 "
                                  "bytes [0, 8)) are held by chunk 0 microbatch 0 layer 0 (branch cp1)"));
  CHECK_THROWS_WITH(guard.guarded_backward(label(0, 1, 0, 1), memory_range{arena_id{0}, 8, 8}, [] {}),
                    contains_text("has no live forward: it never ran, or its backward already did; run each"));
  CHECK(guard.live() == 1);
}
