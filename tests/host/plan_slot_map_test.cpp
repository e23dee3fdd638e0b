// Slot maps chosen from the schedule (issue 8), checked by the independent verifier; and the tests
// that pin what issue 11 found unguarded in the plan layer: the exact clique against brute force,
// offsets strictly better than the coloring, the placement search accepting a better order, the
// verifier's gradient checks, and the message of every planner error.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/load.hpp"
#include "graphpool/plan/placement.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"
#include "graphpool/plan/spec.hpp"
#include "checked_plan.hpp"
#include "packed_check.hpp"
#include "plan_verifier.hpp"

using namespace graphpool::plan;
using graphpool::testing::contains_text;
using graphpool::testing::check_packed;
using graphpool::testing::lowest_packed;
using graphpool::testing::checked_plan;
using graphpool::testing::verify_plan;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

problem one_branch(std::vector<schedule> schedules, std::vector<int> layers, slot_rule rule, std::size_t saved = 8 * MiB) {
  problem p;
  p.schedules = std::move(schedules);
  p.layers_per_chunk = std::move(layers);
  p.branches = {{"cp1", saved, 1 * MiB}};
  p.rule = rule;
  return p;
}

std::vector<schedule> interleaved_counts(int pp, int rank, int vpp, int first, int last) {
  std::vector<schedule> result;
  for (int m = first; m <= last; ++m) result.push_back(schedule::interleaved(pp, rank, m, vpp, pp));
  return result;
}

}  // namespace

TEST_CASE("a schedule-aware map reaches the live bound where m mod S cannot (issue 8's worst case)", "[plan][slot_map]") {
  // PP 4, rank 2, VPP 2, group 4, M 32, one layer: live 56 MiB; m mod S needs 88 (its optimum).
  const problem mod = one_branch({schedule::interleaved(4, 2, 32, 2, 4)}, {1}, slot_rule::mod);
  const plan by_mod = checked_plan(mod);
  CHECK(by_mod.saved.footprint_bytes == 88 * MiB);
  CHECK(by_mod.saved.live_bound_bytes == 56 * MiB);
  problem by_schedule = mod;
  by_schedule.rule = slot_rule::schedule;
  const plan mapped = checked_plan(by_schedule);
  CHECK(mapped.saved.footprint_bytes == 56 * MiB);
  CHECK(mapped.saved.lower_bound_bytes == 56 * MiB);
  // At the live bound the returned gradients close an odd cycle (three or more regions); within the
  // default budget (twice m mod S's copies) the copies split by backward parity and the gradients take
  // their live bound. With m mod S's copies alone the saved frames still reach it.
  CHECK(mapped.slots <= 2 * by_mod.slots);
  CHECK(mapped.grad.footprint_bytes == mapped.grad.live_bound_bytes);
  problem same_copies = by_schedule;
  same_copies.max_copies = by_mod.slots;
  const plan tight = checked_plan(same_copies);
  CHECK(tight.saved.footprint_bytes == 56 * MiB);
  CHECK(tight.slots == by_mod.slots);  // the same number of captured copies
  CHECK(tight.grad.footprint_bytes > mapped.grad.footprint_bytes);
  CHECK(mapped.rule == slot_rule::schedule);
  CHECK(checked_plan(by_schedule, assignment::coloring).saved.footprint_bytes <= by_mod.saved.footprint_bytes);
}

TEST_CASE("one map per schedule over one set of copies reaches the union's live bound", "[plan][slot_map]") {
  // DESIGN.md: PP 4 rank 3, VPP 2, M = 1..128: live 5 frames, m mod S needs 8, a map 5 with no more copies.
  const problem p = one_branch(interleaved_counts(4, 3, 2, 1, 128), {1}, slot_rule::schedule, 1 * MiB);
  const plan mapped = checked_plan(p);
  CHECK(mapped.saved.footprint_bytes == 5 * MiB);
  CHECK(mapped.saved.live_bound_bytes == 5 * MiB);
  REQUIRE(mapped.slot_maps.size() == 128);
  CHECK(find_slot_map(mapped, 17).microbatches == 17);
  CHECK(find_slot_map(mapped, 17).slots.size() == 2);
  problem mod = p;
  mod.rule = slot_rule::mod;
  CHECK(checked_plan(mod).saved.footprint_bytes == 8 * MiB);
}

TEST_CASE("equal frames plan at exactly the live bound with no copy limit", "[plan][slot_map]") {
  for (int pp : {2, 4, 8}) {
    for (int rank = 0; rank < pp; ++rank) {
      for (int vpp : {2, 4}) {
        INFO("pp " << pp << " rank " << rank << " vpp " << vpp);
        problem p = one_branch({schedule::interleaved(pp, rank, 2 * pp, vpp, pp)}, {2}, slot_rule::schedule);
        p.max_copies = 0;
        const plan mapped = checked_plan(p);
        CHECK(mapped.saved.footprint_bytes == mapped.saved.live_bound_bytes);
        p.max_copies = twice_modulo_copies;  // the default budget: never more than twice m mod S's copies
        CHECK(checked_plan(p).slots <= 2 * count_slots(p.schedules));
      }
    }
  }
}

TEST_CASE("equal frames in chunks of different layer counts reach a union's live bound", "[plan][slot_map]") {
  // A chunk's layers are frames of their own: a new copy's layers go one by one into free frames, so
  // chunks of 3, 2 and 1 layers pack like single frames (regions per chunk left 1.03-1.04 here).
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    std::vector<schedule> union_of_counts;
    for (int m = 4; m <= 32; m += 4) union_of_counts.push_back(schedule::interleaved(4, rank, m, 4, 4));
    problem p = one_branch(union_of_counts, {0, 3, 2, 1}, slot_rule::schedule);
    p.max_copies = 0;
    const plan mapped = checked_plan(p);
    CHECK(mapped.saved.footprint_bytes == mapped.saved.live_bound_bytes);
    CHECK(mapped.saved.lower_bound_bytes == mapped.saved.live_bound_bytes);
    CHECK(mapped.saved.lower_bound_exact);
  }
}

TEST_CASE("every layout packing gives valid maps and layouts, at or above the live bound", "[plan][slot_map]") {
  // Heterogeneous chunks (one empty, layers of different sizes), single schedules and unions.
  const std::vector<std::vector<std::size_t>> frame_bytes = {{}, {77 * MiB, 9 * MiB}, {40 * MiB}, {188 * MiB, 0, 21 * MiB}};
  std::vector<std::size_t> chunk_bytes;
  for (const auto& layers : frame_bytes) chunk_bytes.push_back(std::accumulate(layers.begin(), layers.end(), std::size_t{0}));
  for (int rank = 0; rank < 4; ++rank) {
    for (bool union_of_counts : {false, true}) {
      const std::vector<schedule> schedules =
          union_of_counts ? interleaved_counts(4, rank, 4, 1, 12) : std::vector<schedule>{schedule::interleaved(4, rank, 12, 4, 4)};
      const std::size_t live = peak_live_bytes(schedules, chunk_bytes);
      for (const packing& how : layout_packings) {
        INFO("rank " << rank << " union " << union_of_counts << " order " << static_cast<int>(how.order) << " split "
                     << how.split_layers << " best fit " << how.best_fit);
        const packed_maps packed = pack_maps(schedules, frame_bytes, 1000, how);
        // The periodic layout needs rings of whole periods, up to half the microbatches: M 12 of PP 4 VPP 4
        // (a period of 4) holds none long enough (plan_periodic_test.cpp checks where it does).
        if (how.order == packing_order::periodic && !packed.valid) continue;
        REQUIRE(packed.valid);
        CHECK(check_packed(schedules, frame_bytes, packed).empty());
        CHECK(packed.footprint >= live);
      }
    }
  }
}

TEST_CASE("the height-bounded search packs unequal frames tighter than every greedy order", "[plan][slot_map]") {
  // PP 4, VPP 4, M 24, one layer per chunk of 77, 40, 40 and 188 MiB: first fit and best fit in every
  // order, refined by reordering, leave holes the bounded search fills (it backs up where a frame does
  // not fit under the height it tries).
  const std::vector<std::vector<std::size_t>> frame_bytes = {{77 * MiB}, {40 * MiB}, {40 * MiB}, {188 * MiB}};
  for (int rank : {2, 3}) {
    INFO("rank " << rank);
    const std::vector<schedule> schedules{schedule::interleaved(4, rank, 24, 4, 4)};
    std::string problem;
    const std::size_t bounded = lowest_packed(
        schedules, frame_bytes, [](const packing& how) { return how.order == packing_order::bounded; }, problem);
    const std::size_t greedy = lowest_packed(
        schedules, frame_bytes,
        [](const packing& how) {
          return how.order != packing_order::bounded && how.order != packing_order::sweep &&
                 how.order != packing_order::rising && how.order != packing_order::periodic;
        },
        problem);
    // The sweep's packings are checked too; plan_sweep_test.cpp compares them.
    lowest_packed(schedules, frame_bytes, [](const packing& how) { return how.order == packing_order::sweep; }, problem);
    CHECK(problem.empty());
    CHECK(bounded < greedy);
  }
}

TEST_CASE("a union replays over the bounded layout's copies and opens none where a replay exists", "[plan][slot_map]") {
  // PP 4 rank 3, VPP 4, M = 4..32:4, the same unequal chunks: the anchor (M 32) sets the copies; every
  // other count finds a replay over them by backing up, so the union needs no copy more than M 32 alone.
  const std::vector<std::vector<std::size_t>> frame_bytes = {{77 * MiB}, {40 * MiB}, {40 * MiB}, {188 * MiB}};
  std::vector<schedule> union_of_counts;
  for (int m = 4; m <= 32; m += 4) union_of_counts.push_back(schedule::interleaved(4, 3, m, 4, 4));
  const packing bounded = layout_packings[std::size(layout_packings) - 1];
  REQUIRE(bounded.order == packing_order::bounded);
  const packed_maps alone = pack_maps({union_of_counts.back()}, frame_bytes, 1000, bounded);
  const packed_maps replayed = pack_maps(union_of_counts, frame_bytes, 1000, bounded);
  REQUIRE(alone.valid);
  REQUIRE(replayed.valid);
  CHECK(check_packed(union_of_counts, frame_bytes, replayed).empty());
  CHECK(copies_used(replayed.maps) == copies_used(alone.maps));
  CHECK(replayed.footprint == alone.footprint);
}

TEST_CASE("returned gradients stay at their live bound under the schedule rule", "[plan][slot_map][gradients]") {
  // The runtime example's pipeline (PP 4 rank 0, VPP 2, M 8, two layers): maps laid out at the live
  // bound once left the gradients an odd cycle (three regions where m mod S needs two).
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    problem p = one_branch({schedule::interleaved(4, rank, 8, 2, 4)}, {2}, slot_rule::mod, 64 * MiB);
    p.branches = {{"cp1", 64 * MiB, 64 * MiB}, {"cp2", 32 * MiB, 32 * MiB}};
    const plan by_mod = checked_plan(p);
    p.rule = slot_rule::schedule;
    for (int budget : {twice_modulo_copies, 0}) {
      p.max_copies = budget;
      const plan mapped = checked_plan(p);
      CHECK(mapped.saved.footprint_bytes <= by_mod.saved.footprint_bytes);
      CHECK(mapped.grad.footprint_bytes <= by_mod.grad.footprint_bytes);
      CHECK(mapped.grad.footprint_bytes == mapped.grad.live_bound_bytes);
    }
  }
}

TEST_CASE("copies split by backward parity serve one parity each and keep every map valid", "[plan][slot_map][gradients]") {
  const std::vector<schedule> schedules = interleaved_counts(4, 2, 2, 30, 32);
  const std::vector<slot_map> maps = schedule_maps(schedules, {8 * MiB, 16 * MiB}, 1000, region_choice::lowest);
  const int copies = copies_used(maps);
  const parity_maps split = split_by_backward_parity(schedules, maps, copies, {true, true});
  CHECK(split.copies > copies);  // these maps mix parities in some copy
  CHECK(split.copies <= 2 * copies);
  // Valid for every schedule (liveness throws otherwise), and one parity per (chunk, copy).
  CHECK_NOTHROW(analyze(schedules, split.maps, split.copies, false));
  std::vector<std::vector<int>> parities(2, std::vector<int>(static_cast<std::size_t>(split.copies), 0));
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    int backwards = 0;
    for (const event& e : schedules[k].events()) {
      if (e.kind != phase::backward) continue;
      const int copy = split.maps[k].slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
      CHECK(split.source[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(copy)] ==
            maps[k].slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)]);
      parities[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(copy)] |= 1 << (backwards++ % 2);
    }
  }
  for (const std::vector<int>& row : parities) {
    for (int used : row) CHECK(used != 3);
  }
}

TEST_CASE("a layout packing reports no layout when the copies budget runs out", "[plan][slot_map]") {
  // PP 2 rank 0 1F1B holds two microbatches at once: one copy cannot hold them.
  const packed_maps packed = pack_maps({schedule::one_f_one_b(2, 0, 4)}, {{MiB}}, 1);
  CHECK_FALSE(packed.valid);
  const packed_maps two = pack_maps({schedule::one_f_one_b(2, 0, 4)}, {{MiB}}, 2);
  CHECK(two.valid);
  CHECK(two.footprint == 2 * MiB);
}

TEST_CASE("the default copies budget: at most twice m mod S's copies, never a larger footprint", "[plan][slot_map]") {
  for (int rank = 0; rank < 4; ++rank) {
    for (const std::vector<int>& layers : {std::vector<int>{1}, std::vector<int>{0, 1, 3, 2}}) {
      problem p = one_branch(interleaved_counts(4, rank, 4, 4, 12), layers, slot_rule::mod);
      p.branches.push_back({"cp2", 3 * MiB, 1 * MiB});
      p.overrides = {{3, 0, "cp1", 20 * MiB}};
      const plan by_mod = checked_plan(p);
      p.rule = slot_rule::schedule;
      INFO("rank " << rank << " chunks with layers " << layers.size());
      const plan mapped = checked_plan(p);
      CHECK(mapped.slots <= 2 * by_mod.slots);
      CHECK(mapped.saved.footprint_bytes <= by_mod.saved.footprint_bytes);
      // Ties in footprint go to the fewest copies: m mod S's, when no map is smaller.
      if (mapped.saved.footprint_bytes == by_mod.saved.footprint_bytes) CHECK(mapped.slots == by_mod.slots);
      p.max_copies = by_mod.slots;  // a budget of exactly m mod S's copies is still valid
      CHECK(checked_plan(p).slots <= by_mod.slots);
    }
  }
}

TEST_CASE("arenas by coloring: the default budget is never above m mod S's either", "[plan][slot_map]") {
  // A layout at the live bound gives maps whose coloring can need far more than m mod S's (an audit's
  // case: 673 MiB against 395); the coloring's plan is then compared with m mod S's as any other is.
  problem p = one_branch({schedule::interleaved(2, 1, 8, 2, 2)}, {1}, slot_rule::mod, 64 * MiB);
  p.overrides = {{1, 0, "cp1", 203 * MiB}};
  for (assignment mode : {assignment::offsets, assignment::coloring}) {
    p.rule = slot_rule::mod;
    const plan by_mod = checked_plan(p, mode);
    p.rule = slot_rule::schedule;
    const plan mapped = checked_plan(p, mode);
    INFO("mode " << (mode == assignment::offsets ? "offsets" : "coloring"));
    CHECK(mapped.saved.footprint_bytes <= by_mod.saved.footprint_bytes);
    CHECK(mapped.slots <= 2 * by_mod.slots);
  }
}

TEST_CASE("slot maps are written to JSON and drive the TransformerEngine tuples", "[plan][slot_map][report]") {
  const problem p = one_branch({schedule::interleaved(2, 0, 3, 2, 2)}, {1}, slot_rule::schedule, 1 * MiB);
  const plan mapped = checked_plan(p);
  const std::string json = to_json(mapped);
  CHECK_THAT(json, contains_text("\"slot_rule\": \"schedule\""));
  const slot_map& map = find_slot_map(mapped, 3);
  std::string expected = "{\"microbatches\": 3, \"map\": [[";
  for (std::size_t m = 0; m < 3; ++m) expected += (m ? ", " : "") + std::to_string(map.slots[0][m]);
  CHECK_THAT(json, contains_text(expected + "], ["));
  const std::vector<te_slot> tuples = te_slots(mapped);
  REQUIRE(tuples.size() == 2 * 3);
  for (std::size_t i = 0; i < tuples.size(); ++i) {
    const int chunk = static_cast<int>(i / 3);
    CHECK(tuples[i].io_slot == map.slots[static_cast<std::size_t>(chunk)][i % 3]);
  }
  // A map other than m mod S (chunk 0's copies renamed s -> S-1-s): the tuples follow the map, not m mod S.
  plan renamed = mapped;
  REQUIRE(renamed.slots > 1);
  for (int& copy : renamed.slot_maps[0].slots[0]) copy = renamed.slots - 1 - copy;
  const std::vector<te_slot> renamed_tuples = te_slots(renamed);
  for (std::size_t m = 0; m < 3; ++m) {
    CHECK(renamed_tuples[m].io_slot == renamed.slot_maps[0].slots[0][m]);
    CHECK(renamed_tuples[m].branch == renamed.slot_maps[0].slots[0][m]);
  }
  CHECK(renamed_tuples[0].io_slot != 0);  // microbatch 0 is not on copy 0 mod S
  const plan by_mod = checked_plan(one_branch({schedule::interleaved(2, 0, 3, 2, 2)}, {1}, slot_rule::mod, 1 * MiB));
  CHECK_THAT(to_json(by_mod), contains_text("\"slot_rule\": \"mod\""));
  CHECK_THAT(summary_table(mapped), contains_text("slot rule schedule"));
  // Read back, a plan writes the same document, the same table and the same tuples: its slot rule, the
  // coloring's figures and every frame's color come back with it.
  const plan read_back = from_json(json);
  CHECK(read_back.rule == slot_rule::schedule);
  CHECK(to_json(read_back) == json);
  CHECK(summary_table(read_back) == summary_table(mapped));
  CHECK(te_slots_text(te_slots(read_back)) == te_slots_text(tuples));
  CHECK(from_json(to_json(by_mod)).rule == slot_rule::mod);
  CHECK_THROWS_WITH(from_json(R"({"mode": "offsets", "slot_rule": "best"})"),
                    contains_text("plan JSON: slot_rule \"best\" is neither \"mod\" nor \"schedule\""));
  CHECK_THROWS_WITH(find_slot_map(mapped, 4),
                    contains_text("no slot map for a schedule of 4 microbatch(es): the plan was made for 3; plan with"));
  CHECK_THROWS_WITH(te_slots(mapped, 5), contains_text("no slot map for a schedule of 5 microbatch(es)"));
}

TEST_CASE("slot rule and copies budget errors say what to change", "[plan][slot_map][errors]") {
  problem p = one_branch({schedule::one_f_one_b(4, 0, 8)}, {1}, slot_rule::schedule);
  p.max_copies = -2;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("max_copies -2 (problem::max_copies; --max-copies in graphpool-plan) cannot be "
                                  "negative; give 0 for no limit"));
  p.max_copies = 3;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("max_copies 3 (problem::max_copies; --max-copies in graphpool-plan) is below the 4 "
                                  "microbatches one chunk holds at once; allow at least 4"));
  p.max_copies = twice_modulo_copies;
  p.slots = 4;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("slots 4 applies to the mod slot rule; with the schedule rule give max_copies"));
  p.slots = 0;
  p.rule = slot_rule::mod;
  p.max_copies = 4;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("max_copies 4 applies to the schedule slot rule; with the mod rule give slots"));
  p.max_copies = twice_modulo_copies;
  p.slots = -1;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets), contains_text("slots must be at least 1, not -1"));
  CHECK_THROWS_WITH(analyze(p.schedules, -3), contains_text("slots must be at least 1, not -3"));
}

TEST_CASE("liveness rejects maps that do not fit their schedules", "[plan][slot_map][errors]") {
  const std::vector<schedule> schedules{schedule::one_f_one_b(2, 0, 3)};  // 1 1 -1 1 -1 -1
  CHECK_THROWS_WITH(analyze(schedules, {}, 2, false), contains_text("0 slot map(s) for 1 schedule(s); give one map per"));
  slot_map map{"m", 2, {{0, 1}}};
  CHECK_THROWS_WITH(analyze(schedules, {map}, 2, false),
                    contains_text("the slot map for schedule '1f1b pp=2 rank=0 microbatches=3' is for 2 microbatch(es) "
                                  "of 1 chunk(s), not 3 of 1"));
  map = {"m", 3, {{0, 1, 2}}};
  CHECK_THROWS_WITH(analyze(schedules, {map}, 2, false),
                    contains_text("sends chunk 0 microbatch 2 to slot 2, outside [0, 2)"));
  map = {"m", 3, {{0, 0, 1}}};  // microbatch 1 starts while 0 is alive
  CHECK_THROWS_WITH(analyze(schedules, {map}, 2, false),
                    contains_text("lands on frame (chunk 0, slot 0) still alive for microbatch 0: the slot map is invalid"));
  map = {"m", 3, {{0, 1, 0}}};  // microbatch 2 starts after 0's backward: valid
  CHECK(analyze(schedules, {map}, 2, false).saved.conflicts(0, 1));
}

TEST_CASE("the remaining planner, schedule and spec errors name what is wrong", "[plan][errors]") {
  problem p = one_branch({schedule::one_f_one_b(2, 0, 4)}, {1}, slot_rule::mod);
  p.branches.push_back({"", 1, 0});
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets), contains_text("planner: branch 1 has no name"));
  p = one_branch({schedule::one_f_one_b(2, 0, 4)}, {4096}, slot_rule::mod);
  p.slots = 5;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("20480 frames (1 chunk(s) x 5 slot(s) x layers) is more than the 16384 one plan may hold"));
  p.layers_per_chunk = {0};  // no frames: the (chunk, slot) pairs alone are too many
  p.slots = 20000;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("1 chunk(s) x 20000 slot(s) is more than the 16384 (chunk, slot) pairs"));
  CHECK_THROWS_WITH(schedule::from_order({1, -1}, -1), contains_text("the number of chunks must be in [1, 4096], not -1"));
  CHECK_THROWS_WITH(schedule::interleaved(2, 0, 4, 2, 0), contains_text("group size 0 must be in [1, 65536]"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank=0,microbatches=5000"),
                    contains_text("microbatches: 5000 is outside [1, 4096]"));
  CHECK_THROWS_WITH(parse_size("1.5B"), contains_text("size '1.5B' is not a whole number of bytes"));
  CHECK_THROWS_WITH(parse_size("9999999GiB"), contains_text("size '9999999GiB' is too large"));
  CHECK_THROWS_WITH(parse_frame_bytes_spec("chunk=0,layer=0,branch=a,saved=1,tp=2"),
                    contains_text("unknown key 'tp'; use chunk, layer, branch, saved"));
}

TEST_CASE("the reported lower bound is never below the bytes alive at once, where the clique search stops early",
          "[plan][bounds]") {
  // PP 8 rank 7, VPP 4, M 24, chunks of 77, 40, 40 and 188 MiB, the default copies budget: the clique
  // search over the copies ran out of effort at a clique lighter than the microbatches alive at the peak,
  // which are a clique too. (The planner-quality corpus's verifier found it.)
  problem p;
  p.schedules = {schedule::interleaved(8, 7, 24, 4, 8)};
  p.layers_per_chunk = {1};
  p.branches = {{"cp1", 40 * MiB, 8 * MiB}, {"cp2", 24 * MiB, 8 * MiB}};
  p.overrides = {{0, 0, "cp1", 77 * MiB}, {1, 0, "cp2", 9 * MiB}, {3, 0, "cp1", 188 * MiB}};
  p.rule = slot_rule::schedule;
  const plan planned = checked_plan(p);  // the verifier rejects a bound below the peak it replays
  CHECK(planned.saved.lower_bound_bytes >= planned.saved.live_bound_bytes);
}

TEST_CASE("the clique search matches brute force on graphs of up to 20 vertices, weights up to 50", "[plan][bounds]") {
  for (std::uint32_t seed : {3U, 17U, 29U}) {
    std::mt19937 random(seed);
    for (int trial = 0; trial < 60; ++trial) {
      const std::size_t n = 12 + random() % 9;
      conflict_graph graph(n);
      std::vector<std::size_t> weights(n);
      for (std::size_t v = 0; v < n; ++v) weights[v] = random() % 8 == 0 ? 0 : 1 + random() % 50;
      const std::uint32_t density = 1 + random() % 3;  // edges with probability 1/2, 2/3 or 3/4
      for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t b = a + 1; b < n; ++b) {
          if (random() % (density + 1) != 0) graph.add_conflict(a, b);
        }
      }
      // Brute force over every vertex set, extending cliques one vertex at a time.
      std::vector<std::size_t> weight_of(std::size_t{1} << n, 0);
      std::vector<bool> is_clique(std::size_t{1} << n, false);
      is_clique[0] = true;
      std::size_t best = 0;
      for (std::uint32_t set = 1; set < (1U << n); ++set) {
        const std::size_t top = 31 - static_cast<std::size_t>(__builtin_clz(set));
        const std::uint32_t rest = set & ~(1U << top);
        bool clique = is_clique[rest];
        for (std::size_t b = 0; b < top && clique; ++b) clique = !((rest >> b) & 1U) || graph.conflicts(top, b);
        is_clique[set] = clique;
        weight_of[set] = weight_of[rest] + weights[top];
        if (clique) best = std::max(best, weight_of[set]);
      }
      const clique found = max_weight_clique(graph, weights);
      INFO("seed " << seed << " trial " << trial << " n " << n);
      CHECK(found.exact);
      CHECK(found.weight == best);
      std::size_t sum = 0;
      for (std::size_t a : found.vertices) {
        sum += weights[a];
        for (std::size_t b : found.vertices) CHECK((a == b || graph.conflicts(a, b)));
      }
      CHECK(sum == found.weight);
    }
  }
}

TEST_CASE("offsets mode is strictly better than the coloring where frames differ in size", "[plan][placement]") {
  // VPP 4, PP 2, rank 1, M = 24, one layer per chunk; chunk sizes 77, 40, 40, 188 MiB (the benchmark's
  // heterogeneous layout): offsets reach the clique bound, 502 MiB; the best coloring takes 690.
  problem p;
  p.schedules = {schedule::interleaved(2, 1, 24, 4, 2)};
  p.layers_per_chunk = {1};
  p.branches = {{"cp1", 40 * MiB, 8 * MiB}, {"cp2", 24 * MiB, 8 * MiB}};
  p.overrides = {{0, 0, "cp1", 77 * MiB}, {3, 0, "cp1", 188 * MiB}, {1, 0, "cp2", 9 * MiB}};
  const plan offsets = checked_plan(p, assignment::offsets);
  const plan colored = checked_plan(p, assignment::coloring);
  CHECK(offsets.saved.footprint_bytes == 502 * MiB);
  CHECK(offsets.saved.lower_bound_bytes == 502 * MiB);
  CHECK(colored.saved.footprint_bytes == 690 * MiB);
  CHECK(offsets.saved.footprint_bytes < offsets.saved.coloring_bytes);
}

TEST_CASE("the placement search accepts a better order than its seeds", "[plan][placement]") {
  std::mt19937 random(5);
  placement_search seeds_only;
  seeds_only.iterations = 0;
  int improved = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 8 + random() % 10;
    conflict_graph graph(n);
    std::vector<std::size_t> weights(n);
    for (std::size_t& w : weights) w = 1 + random() % 20;
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) {
        if (random() % 2 == 0) graph.add_conflict(a, b);
      }
    }
    std::vector<std::size_t> order(n);
    for (std::size_t v = 0; v < n; ++v) order[v] = v;
    const placement seeded = best_placement(graph, weights, {order}, 0, seeds_only);
    const placement searched = best_placement(graph, weights, {order}, 0);
    CHECK(searched.footprint <= seeded.footprint);
    if (trial == 1) {  // pinned: the natural order needs 104, the search finds 75
      CHECK(seeded.footprint == 104);
      CHECK(searched.footprint == 75);
    }
    improved += searched.footprint < seeded.footprint ? 1 : 0;
  }
  CHECK(improved >= 5);
}

TEST_CASE("the verifier rejects broken gradients, maps and frames", "[plan][verifier]") {
  problem p = one_branch({schedule::interleaved(2, 0, 4, 2, 2)}, {2}, slot_rule::schedule, 4 * MiB);
  p.branches[0].grad_per_slot = 2 * MiB;
  const plan good = make_plan(p, assignment::offsets);
  REQUIRE(verify_plan(p, good).ok);
  auto rejects = [&](plan bad, const std::string& why) {
    const auto v = verify_plan(p, bad);
    CHECK_FALSE(v.ok);
    CHECK_THAT(v.problem, contains_text(why));
  };
  plan bad = good;
  bad.grads[0].bytes /= 2;  // a returned-gradient arena at half size
  rejects(bad, "smaller than branch cp1 returns");
  bad = good;
  bad.grads[0].offset = bad.grad_arena_bytes[0];
  rejects(bad, "lies outside its arena");
  bad = good;
  bad.grad_arena_bytes.push_back(1);
  rejects(bad, "gradient arena sizes do not add up");
  bad = good;
  bad.grads.pop_back();
  rejects(bad, "returns no planned gradient");
  bad = good;
  for (planned_grad& g : bad.grads) g.offset = 0;
  bad.grad.footprint_bytes = bad.grad_arena_bytes[0];
  rejects(bad, "gradients of consecutive backwards share bytes");
  bad = good;
  for (planned_frame& f : bad.frames) f.offset = 0;
  rejects(bad, "share bytes");
  bad = good;
  bad.slot_maps[0].slots[0][1] = bad.slot_maps[0].slots[0][0];  // microbatches 0 and 1 alive together
  rejects(bad, "a copy is replayed by two microbatches alive together");
  bad = good;
  bad.slot_maps[0].slots[1][0] = bad.slots;
  rejects(bad, "names a copy outside [0, slots)");
  bad = good;
  bad.slot_maps.clear();
  rejects(bad, "not one slot map per schedule");
  // Frames: each message names the frame (chunk, copy, layer).
  const planned_frame& first = good.frames[0];
  const std::string first_name =
      "frame (" + std::to_string(first.chunk) + "," + std::to_string(first.slot) + "," + std::to_string(first.layer) + ")";
  bad = good;
  bad.frames[0].bytes /= 2;
  rejects(bad, first_name + " is smaller than branch cp1 needs");
  bad = good;
  bad.frames[0].offset = bad.arena_bytes[0];
  rejects(bad, first_name + " lies outside its arena");
  bad = good;  // 8 bytes off the alignment, inside the arena (the frame at 0 is not the only one there)
  bad.frames[0].offset = first.offset > 0 ? first.offset - 8 : 8;
  rejects(bad, first_name + " at offset " + std::to_string(bad.frames[0].offset));
}

TEST_CASE("a chunk that runs fewer microbatches than the schedule's count gets valid copies in every map entry",
          "[plan][slot_map]") {
  // Found by the fuzzer: chunk 1 runs 11 microbatches, chunk 2 only 10; the schedule rule left -1 for
  // chunk 2's eleventh entry, which no runtime may index.
  problem p;
  p.schedules = {schedule::parse_order("1,2,-2,-1,1,2,-2,2,-2,-1,1,2,-2,-1,1,1,-1,2,2,-2,-2,1,-1,2,-2,2,-2,-1,1,2,-2,-1,"
                                       "1,1,-1,2,2,-2,-2,1,-1,-1")};
  REQUIRE(p.schedules[0].microbatches() == 11);
  p.layers_per_chunk = {1};
  p.branches = {{"a", 1000, 64}, {"b", 3000, 128}};
  p.rule = slot_rule::schedule;
  for (assignment mode : {assignment::offsets, assignment::coloring}) {
    const plan result = make_plan(p, mode);
    for (const std::vector<int>& chunk : result.slot_maps.at(0).slots) {
      for (int copy : chunk) {
        CHECK(copy >= 0);
        CHECK(copy < result.slots);
      }
    }
    CHECK(verify_plan(p, result).ok);
  }
}
