// The sweep layout (sweep_layout.hpp, lowest_sweep.hpp): valid layouts under the height it is given,
// the squeaky wheel that lowers them, the copies a layout binds microbatches to, and what it buys the
// schedule slot rule on interleaved schedules of unequal chunks (issue 8): single schedules and unions
// whose counts begin the same way.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/lowest_sweep.hpp"
#include "checked_plan.hpp"
#include "frame_layouts.hpp"
#include "packed_check.hpp"

using namespace graphpool::plan;
using graphpool::testing::check_packed;
using graphpool::testing::checked_plan;
using graphpool::testing::check_layout;
using graphpool::testing::most_alive;
using graphpool::testing::one_layer_chunks;
using graphpool::testing::random_frames;
using graphpool::testing::total_bytes;
using graphpool::testing::lowest_packed;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Issue 8's unequal chunks: one layer each, of 77, 40, 40 and 188 MiB.
const std::vector<std::vector<std::size_t>> unequal_chunks = {{77 * MiB}, {40 * MiB}, {40 * MiB}, {188 * MiB}};

bool is_sweep(const packing& how) { return how.order == packing_order::sweep; }

packing sweep_packing() {
  for (const packing& how : layout_packings) {
    if (how.order == packing_order::sweep) return how;
  }
  FAIL("no sweep among the layout packings");
  return {};
}

// A union of counts (longest last) packed by `how` is valid over unequal_chunks and stays at the footprint
// of its longest count packed alone.
void check_union_at_longest_count(const std::vector<schedule>& union_of_counts, const packing& how) {
  const packed_maps alone = pack_maps({union_of_counts.back()}, unequal_chunks, 1000, how);
  const packed_maps all = pack_maps(union_of_counts, unequal_chunks, 1000, how);
  REQUIRE(alone.valid);
  REQUIRE(all.valid);
  CHECK(check_packed(union_of_counts, unequal_chunks, all).empty());
  CHECK(all.footprint == alone.footprint);
}

}  // namespace

TEST_CASE("the sweep lays random frames out without overlaps, under the height it was given", "[plan][sweep]") {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    const std::vector<detail::frame_interval> frames = random_frames(random, 16);
    const std::size_t total = total_bytes(frames);
    const std::size_t floor = most_alive(frames);
    // Begun at the start, and in the middle (frames born before then go after the others, backwards).
    for (std::size_t from : {0, 30}) {
      INFO("from event " << from);
      std::size_t effort = 1'000'000;
      detail::sweep_layout sweep(frames, detail::sweep_layout::default_revisit_reach, from);
      for (detail::wall_rule walls : {detail::wall_rule::never, detail::wall_rule::at_the_end}) {
        for (std::size_t height : {floor, floor + floor / 10, total}) {
          const std::vector<std::size_t> offsets = sweep.under(height, walls, effort);
          if (height == total) REQUIRE_FALSE(offsets.empty());  // every frame fits above all the others
          if (!offsets.empty()) CHECK(check_layout(frames, offsets, height).empty());
        }
      }
    }
    const detail::swept_layout lowest = detail::lowest_sweep(frames, floor, total, 1'000'000);
    REQUIRE_FALSE(lowest.offsets.empty());
    CHECK(check_layout(frames, lowest.offsets, total).empty());
    CHECK(detail::top_of(frames, lowest.offsets) >= floor);
    CHECK(detail::top_of(frames, lowest.offsets) <= lowest.height);
  }
}

TEST_CASE("the sweep and the height-bounded search keep frames as aligned as their sizes, under any height",
          "[plan][sweep]") {
  // A frame against the ceiling sat at the height less its bytes: under a height found by steps of 1/200
  // or by bisection, planned frames came out at offsets 6 bytes off the 256-byte alignment.
  std::mt19937 random(5);
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    const std::vector<detail::frame_interval> frames = random_frames(random, 256);
    const std::size_t total = total_bytes(frames);
    const std::size_t floor = most_alive(frames);
    auto aligned = [](const std::vector<std::size_t>& offsets) {
      return std::all_of(offsets.begin(), offsets.end(), [](std::size_t offset) { return offset % 256 == 0; });
    };
    std::size_t effort = 1'000'000;
    detail::sweep_layout sweep(frames);
    for (std::size_t height : {floor + 1 + random() % 255, floor + floor / 10 + 7, total + 3}) {
      const std::vector<std::size_t> offsets = sweep.under(height, detail::wall_rule::at_the_end, effort);
      if (height == total + 3) REQUIRE_FALSE(offsets.empty());
      CHECK(aligned(offsets));
      if (!offsets.empty()) CHECK(check_layout(frames, offsets, height).empty());
    }
    const detail::swept_layout lowest = detail::lowest_sweep(frames, floor, total + 3, 1'000'000, 2);
    REQUIRE_FALSE(lowest.offsets.empty());
    CHECK(aligned(lowest.offsets));
    std::vector<detail::frame_interval> by_start = frames;
    std::sort(by_start.begin(), by_start.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    const std::vector<std::size_t> bounded = detail::lowest_layout(by_start, floor, total + 3, 1'000'000);
    CHECK(aligned(bounded));
    if (!bounded.empty()) CHECK(check_layout(by_start, bounded, total + 3).empty());
  }
}

TEST_CASE("the sweep reports no layout when its effort runs out or the height is below one frame", "[plan][sweep]") {
  const std::vector<detail::frame_interval> frames = {{0, 4, 64}, {1, 5, 32}, {2, 6, 32}};
  detail::sweep_layout sweep(frames);
  std::size_t none = 0;
  CHECK(sweep.under(1024, detail::wall_rule::never, none).empty());
  std::size_t effort = 1000;
  CHECK(sweep.under(63, detail::wall_rule::never, effort).empty());
  CHECK(sweep.under(127, detail::wall_rule::never, effort).empty());  // 128 bytes are alive at step 2
  const std::vector<std::size_t> offsets = sweep.under(128, detail::wall_rule::at_the_end, effort);
  REQUIRE_FALSE(offsets.empty());
  CHECK(check_layout(frames, offsets, 128).empty());
}

TEST_CASE("the squeaky wheel only lowers a layout, and keeps it valid", "[plan][sweep]") {
  std::mt19937 random(11);
  std::size_t lowered = 0;
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    const std::vector<detail::frame_interval> frames = random_frames(random, 16);
    const std::size_t floor = most_alive(frames);
    const detail::squeaky_setting setting = detail::squeaky_settings[round % std::size(detail::squeaky_settings)];
    detail::sweep_layout sweep(frames, setting.revisit_reach);
    detail::swept_layout layout = detail::lowest_sweep(sweep, frames, floor, 2 * floor, 100'000);
    REQUIRE_FALSE(layout.offsets.empty());
    const std::size_t before = detail::top_of(frames, layout.offsets);
    std::size_t effort = 1'000'000;
    detail::squeeze(sweep, frames, floor, effort, layout, setting.move);
    const std::size_t after = detail::top_of(frames, layout.offsets);
    CHECK(check_layout(frames, layout.offsets, after).empty());
    CHECK(after <= before);
    CHECK(after >= floor);
    lowered += after < before ? 1 : 0;
  }
  CHECK(lowered > 0);
}

TEST_CASE("a sweep that finds no room says where it got stuck, and the frame there can be placed earlier",
          "[plan][sweep]") {
  // At step 5, 2 + 2 + 3 bytes are alive: under a height of 6 the third frame (position 2) finds no room.
  const std::vector<detail::frame_interval> frames = {{0, 10, 2}, {1, 10, 2}, {5, 6, 3}};
  detail::sweep_layout sweep(frames);
  std::size_t effort = 10'000;
  CHECK(sweep.under(6, detail::wall_rule::never, effort).empty());
  CHECK(sweep.stuck() == 2);
  // Placed first, it takes the bottom; the second long frame is then the one that finds no room.
  sweep.promote(2, 2);
  CHECK(sweep.under(6, detail::wall_rule::never, effort).empty());
  CHECK(sweep.stuck() == 2);
  const std::vector<std::size_t> offsets = sweep.under(7, detail::wall_rule::never, effort);
  REQUIRE_FALSE(offsets.empty());
  CHECK(offsets[2] == 0);
  CHECK(check_layout(frames, offsets, 7).empty());
}

TEST_CASE("a layout binds microbatches whose layers sit alike to one copy, and adds none past the budget",
          "[plan][sweep]") {
  const std::vector<std::vector<std::size_t>> frame_bytes = {{8, 4}, {16}};
  const std::vector<detail::lifetime> items = {{0, 0, 0, 2}, {0, 1, 1, 3}, {1, 0, 2, 4}, {0, 2, 3, 5}};
  // Frames as frames_of lists them: item 0 layers 0 and 1, item 1 layers 0 and 1, item 2, item 3 layers 0 and 1.
  const std::vector<std::size_t> offsets = {0, 8, 12, 20, 0, 0, 8};
  detail::copy_table copies(frame_bytes);
  std::vector<std::ptrdiff_t> copy_of;
  REQUIRE(detail::add_copies(copies, items, offsets, 2, copy_of));
  CHECK(copies.size() == 3);
  CHECK(copy_of[0] == copy_of[3]);  // microbatches 0 and 2 of chunk 0: layers at 0 and 8 both
  CHECK(copy_of[0] != copy_of[1]);
  CHECK(copies.chunk(static_cast<std::size_t>(copy_of[2])) == 1);

  detail::copy_table tight(frame_bytes);
  std::vector<std::ptrdiff_t> unchanged = {7};
  CHECK_FALSE(detail::add_copies(tight, items, offsets, 1, unchanged));  // chunk 0 needs two copies
  CHECK(tight.size() == 0);
  CHECK(unchanged == std::vector<std::ptrdiff_t>{7});
}

TEST_CASE("the sweep packs the exchange of unequal chunks tighter than every greedy order and the bounded search",
          "[plan][sweep]") {
  // PP 8 rank 3, VPP 4, M 32: chunk 3's 188 MiB frames are born as chunk 0's 77 MiB ones die, and back.
  const std::vector<schedule> schedules{schedule::interleaved(8, 3, 32, 4, 8)};
  std::string problem;
  const std::size_t swept = lowest_packed(schedules, unequal_chunks, is_sweep, problem);
  // The rising search (exact, at the live bound) is compared in plan_rising_test.cpp.
  const std::size_t others = lowest_packed(
      schedules, unequal_chunks, [](const packing& how) { return !is_sweep(how) && how.order != packing_order::rising &&
                                                  how.order != packing_order::periodic; },
      problem);
  CHECK(problem.empty());
  CHECK(swept < others);
}

TEST_CASE("the squeaky wheel lowers the sweep's layout of an interleaved schedule of unequal chunks",
          "[plan][sweep]") {
  // PP 4 rank 2, VPP 4, M 24: the exact sweep needs 1.105x the live bound, with noisy restarts 1.05x;
  // moving the frames it gets stuck at earlier in its order, 1.035x.
  const std::vector<schedule> schedules{schedule::interleaved(4, 2, 24, 4, 4)};
  const std::size_t live = peak_live_bytes(schedules.front(), {77 * MiB, 40 * MiB, 40 * MiB, 188 * MiB});
  std::string problem;
  const std::size_t squeaky =
      lowest_packed(schedules, unequal_chunks, [](const packing& how) { return is_sweep(how) && how.squeaky; }, problem);
  const std::size_t others =
      lowest_packed(schedules, unequal_chunks, [](const packing& how) { return is_sweep(how) && !how.squeaky; }, problem);
  CHECK(problem.empty());
  REQUIRE(squeaky != static_cast<std::size_t>(-1));  // a squeaky packing is among the layout packings
  CHECK(squeaky < others);
  CHECK(squeaky * 100 <= live * 104);
}

TEST_CASE("the squeaky packing keeps the lowest layout of its settings on a single schedule", "[plan][sweep]") {
  // PP 8 rank 3, VPP 4, M 24: the first setting alone leaves the anchor at 1.065x the live bound; the
  // lowest of all settings is at 1.033x. Each setting runs with the whole effort, so more never end higher.
  const schedule s = schedule::interleaved(8, 3, 24, 4, 8);
  const std::vector<detail::lifetime> items = detail::lifetimes_of(s);
  const std::size_t live = peak_live_bytes(s, {77 * MiB, 40 * MiB, 40 * MiB, 188 * MiB});
  packing how;
  for (const packing& each : layout_packings) {
    if (is_sweep(each) && each.squeaky && each.begin_permille == 0) how = each;
  }
  REQUIRE(how.squeaky);
  auto anchor = [&](std::size_t settings) {
    detail::swept_layout swept;
    const detail::anchor_layout laid =
        detail::sweep_anchor(unequal_chunks, items, live, 1000, how.search_effort, 0, settings, swept);
    REQUIRE(laid.valid);
    CHECK(detail::top_of(detail::frames_of(unequal_chunks, items), swept.offsets) == laid.footprint);
    return laid.footprint;
  };
  const std::size_t first = anchor(1);
  const std::size_t all = anchor(std::size(detail::squeaky_settings));
  CHECK(all < first);
  CHECK(all * 1000 <= live * 1040);
  const packed_maps packed = pack_maps({s}, unequal_chunks, 1000, how);
  REQUIRE(packed.valid);
  CHECK(check_packed({s}, unequal_chunks, packed).empty());
  CHECK(packed.footprint == all);
}

TEST_CASE("a sweep begun in the steady state packs what one begun at the start does not", "[plan][sweep]") {
  // PP 8 rank 2, VPP 2, M 128, chunks of 77 and 40 MiB: begun at the start and lowered by the squeaky
  // wheel's first setting, the sweep needs 1.064x the live bound (the lowest of every other packing of the
  // schedule rule, 1.055x); begun a quarter in, 1.047x, within issue 8's 5%.
  const std::vector<std::vector<std::size_t>> chunks = {{77 * MiB}, {40 * MiB}};
  const schedule s = schedule::interleaved(8, 2, 128, 2, 8);
  const std::vector<detail::lifetime> items = detail::lifetimes_of(s);
  const std::size_t live = peak_live_bytes(s, {77 * MiB, 40 * MiB});
  packing how;
  for (const packing& each : layout_packings) {
    if (is_sweep(each) && each.begin_permille > 0) how = each;
  }
  REQUIRE(how.begin_permille == 250);
  auto anchor = [&](unsigned begin_permille) {
    detail::swept_layout swept;
    const detail::anchor_layout laid = detail::sweep_anchor(chunks, items, live, 1000, how.search_effort,
                                                            static_cast<unsigned>(how.search_steps), 1, swept,
                                                            begin_permille);
    REQUIRE(laid.valid);
    CHECK(check_layout(detail::frames_of(chunks, items), swept.offsets, laid.footprint).empty());
    return laid.footprint;
  };
  CHECK(anchor(0) * 100 > live * 105);
  CHECK(anchor(how.begin_permille) * 100 <= live * 105);
}

TEST_CASE("a union laid out schedule by schedule starts each from the layout of the one before", "[plan][sweep]") {
  // PP 8 rank 3, VPP 4, M = 1..40: no count replays over M 40's copies alone; each is swept by itself
  // from the choices of the count before it, and the union stays at M 40's footprint.
  std::vector<schedule> union_of_counts;
  for (int m = 1; m <= 40; ++m) union_of_counts.push_back(schedule::interleaved(8, 3, m, 4, 8));
  check_union_at_longest_count(union_of_counts, sweep_packing());
}

TEST_CASE("a union of 128 counts stays at its longest count's footprint: a count laid out by itself may take "
          "more than an equal share of the effort", "[plan][sweep]") {
  // PP 4 rank 1, VPP 4, M = 1..128: M 127 finds no replay over M 128's copies and is swept by itself
  // first; held to 1/127 of the effort it rose 2.5% above M 128's footprint (1.150 to 1.179 of the
  // live bound), and every count after it kept that.
  std::vector<schedule> union_of_counts;
  for (int m = 1; m <= 128; ++m) union_of_counts.push_back(schedule::interleaved(4, 1, m, 4, 4));
  const packing how = sweep_packing();
  REQUIRE(how.own_layout_share > 0);
  check_union_at_longest_count(union_of_counts, how);
}

TEST_CASE("a union's counts laid out by themselves take their frames' layout where lower than their blocks', "
          "and keep the blocks' where the frames run out of copies", "[plan][sweep]") {
  // PP 4 rank 1, VPP 4, M = 1..40, 3 layers of unequal sizes (the planner-quality corpus's): counts find
  // no replay over M 40's copies and are laid out by themselves. As blocks they rise 7.5% above the
  // frames' layout; the frames open 108 copies of a chunk, past a budget of 100.
  problem p;
  for (int m = 1; m <= 40; ++m) p.schedules.push_back(schedule::interleaved(4, 1, m, 4, 4));
  p.layers_per_chunk = {3};
  p.branches = {{"cp1", 40 * MiB, 8 * MiB}, {"cp2", 24 * MiB, 8 * MiB}};
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 3; ++l) {
      if ((c + l) % 3 == 0) p.overrides.push_back({c, l, "cp1", static_cast<std::size_t>(40 + 37 * (c + 1)) * MiB});
      if ((c * 5 + l) % 4 == 1) p.overrides.push_back({c, l, "cp2", static_cast<std::size_t>(9 + 13 * l) * MiB});
    }
  }
  const std::vector<std::vector<std::size_t>> frame_bytes = detail::size_frames(p, 4).bytes;
  packing how = sweep_packing();
  REQUIRE(how.own_layout_share > 0);
  for (int budget : {140, 100}) {
    INFO("budget " << budget);
    how.lower_own_frames = false;
    const packed_maps blocks_first = pack_maps(p.schedules, frame_bytes, budget, how);
    how.lower_own_frames = true;
    const packed_maps lower = pack_maps(p.schedules, frame_bytes, budget, how);
    REQUIRE(blocks_first.valid);
    REQUIRE(lower.valid);
    CHECK(check_packed(p.schedules, frame_bytes, lower).empty());
    if (budget == 140) {
      CHECK(lower.footprint * 1000 < blocks_first.footprint * 950);
      CHECK(copies_used(lower.maps) > 100);
    } else {
      CHECK(lower.footprint == blocks_first.footprint);
      CHECK(copies_used(lower.maps) == copies_used(blocks_first.maps));
    }
  }
}

TEST_CASE("the schedule rule plans issue 8's worst interleaved case within 5% of the live bound", "[plan][sweep]") {
  // PP 8 rank 3, VPP 4, M 128, chunks of 77, 40, 40 and 188 MiB: m mod S and every greedy layout need
  // 1.19x the live bound; the sweep 1.08x, lowered by the squeaky wheel to 1.06x from the exact sweep's
  // layout and to 1.0497x from the noisy sweeps' (the lowest of its settings each time).
  problem p = one_layer_chunks(schedule::interleaved(8, 3, 128, 4, 8), {77 * MiB, 40 * MiB, 40 * MiB, 188 * MiB});
  const plan planned = checked_plan(p);
  CHECK(planned.saved.footprint_bytes * 100 <= planned.saved.live_bound_bytes * 105);
  p.rule = slot_rule::mod;
  p.max_copies = twice_modulo_copies;
  CHECK(checked_plan(p).saved.footprint_bytes > planned.saved.footprint_bytes);
}

TEST_CASE("a longer sweep brings PP 8 rank 1 VPP 4 M 128 from 7.3% above the live bound under 5%", "[plan][sweep]") {
  // Chunks of 77, 40, 40 and 188 MiB (the planner-quality corpus): the packings' sweeps run out of effort on
  // the 512 frames (1.073 at best: the periodic layout's, which none of the searches after it lowers); the
  // sweep with four times the effort (single_lowering.hpp's longer_sweep_factor) reaches 1.057, and the
  // searches after it 3274 MiB, 1.041 of the 3145 MiB live bound.
  const problem p = one_layer_chunks(schedule::interleaved(8, 1, 128, 4, 8), {77 * MiB, 40 * MiB, 40 * MiB, 188 * MiB});
  const plan planned = checked_plan(p);
  INFO("footprint " << planned.saved.footprint_bytes / MiB << " MiB, live bound " << planned.saved.live_bound_bytes / MiB
                    << " MiB");
  CHECK(planned.saved.live_bound_bytes == 3145 * MiB);
  CHECK(planned.saved.footprint_bytes * 100 <= planned.saved.live_bound_bytes * 105);
}
