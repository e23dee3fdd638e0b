// The planner: reference figures, both assignment modes checked by an independent verifier, bounds,
// sizes per branch, TransformerEngine tuples, and bad input.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/placement.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"
#include "checked_plan.hpp"
#include "plan_verifier.hpp"

using namespace graphpool::plan;
using graphpool::testing::contains_text;
using graphpool::testing::checked_plan;
using graphpool::testing::verify_plan;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

problem uniform(std::vector<schedule> schedules, std::vector<int> layers, std::size_t saved = 64 * MiB,
                std::size_t grad = 16 * MiB) {
  problem p;
  p.schedules = std::move(schedules);
  p.layers_per_chunk = std::move(layers);
  p.branches = {{"cp1", saved, grad}};
  return p;
}

std::vector<schedule> interleaved_range(int pp, int rank, int vpp, int group, int first, int last, int step) {
  std::vector<schedule> result;
  for (int m = first; m <= last; m += step) result.push_back(schedule::interleaved(pp, rank, m, vpp, group));
  return result;
}

}  // namespace

TEST_CASE("PP4 VPP4, 3 layers per chunk, 8 slots: at most 60, 60, 48, 48 saved arenas", "[planner][reference]") {
  const std::vector<std::size_t> reference{60, 60, 48, 48};
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    problem p = uniform(interleaved_range(4, rank, 4, 4, 4, 64, 4), {3});
    p.slots = 8;
    const plan colored = checked_plan(p, assignment::coloring);
    CHECK(colored.frames.size() == 96);
    CHECK(colored.saved.arenas <= reference[static_cast<std::size_t>(rank)]);
    CHECK(colored.saved.arenas <= colored.saved.coloring_arenas);
    const plan offsets = checked_plan(p, assignment::offsets);
    CHECK(offsets.saved.footprint_bytes <= offsets.saved.coloring_bytes);
  }
}

TEST_CASE("equal-size 1F1B schedules plan at exactly the lower bound", "[planner]") {
  for (int pp : {2, 4, 8}) {
    for (int rank = 0; rank < pp; ++rank) {
      std::vector<schedule> schedules;
      for (int m = 1; m <= 32; ++m) schedules.push_back(schedule::one_f_one_b(pp, rank, m));
      for (int layers : {1, 4}) {
        INFO("pp " << pp << " rank " << rank << " layers " << layers);
        const problem p = uniform(schedules, {layers});
        const plan offsets = checked_plan(p, assignment::offsets);
        CHECK(offsets.slots == pp - rank);
        CHECK(offsets.saved.footprint_bytes == offsets.saved.lower_bound_bytes);
        CHECK(offsets.saved.lower_bound_bytes == static_cast<std::size_t>((pp - rank) * layers) * 64 * MiB);
        // Returned gradients: one slot's backwards follow one another on one copy; with two or more
        // slots a backward reads the gradient the previous one (another copy) returned: two alive at once.
        CHECK(offsets.grad.live_bound_bytes == (pp - rank > 1 ? 2 : 1) * 16 * MiB);
        CHECK(checked_plan(p, assignment::coloring).saved.footprint_bytes == offsets.saved.footprint_bytes);
      }
    }
  }
}

TEST_CASE("the clique bound exceeds the live bound where slots are bound by m mod S", "[planner][bounds]") {
  // DESIGN.md: PP2 rank 1, VPP2, G2, M4, 2 layers per chunk: 8 frames pairwise conflict, 6 alive at once.
  const problem p = uniform({schedule::interleaved(2, 1, 4, 2, 2)}, {2}, 1 * MiB);
  const plan result = checked_plan(p, assignment::offsets);
  CHECK(result.saved.lower_bound_bytes == 8 * MiB);
  CHECK(result.saved.lower_bound_exact);
  CHECK(result.saved.live_bound_bytes == 6 * MiB);
  CHECK(result.saved.footprint_bytes == 8 * MiB);
}

TEST_CASE("offsets never exceed the coloring and coloring never uses more arenas than DSATUR", "[planner]") {
  struct shape {
    int pp, rank, vpp, first, last, step;
    std::vector<int> layers;
  };
  const std::vector<shape> shapes{{2, 0, 2, 2, 16, 1, {2}},    {4, 3, 2, 1, 40, 1, {1}},   {4, 2, 2, 8, 32, 8, {0, 3}},
                                  {4, 1, 4, 4, 32, 4, {1, 2, 3, 1}}, {8, 0, 2, 8, 24, 8, {2}}, {2, 1, 4, 3, 9, 3, {1}}};
  for (const shape& s : shapes) {
    problem p = uniform(interleaved_range(s.pp, s.rank, s.vpp, s.pp, s.first, s.last, s.step), s.layers);
    p.branches = {{"cp1", 96 * MiB, 16 * MiB}, {"cp2", 52 * MiB, 16 * MiB}, {"cp4", 27 * MiB, 8 * MiB}};
    p.overrides = {{s.vpp - 1, 0, "cp2", 200 * MiB}};
    INFO("pp " << s.pp << " rank " << s.rank << " vpp " << s.vpp);
    const plan offsets = checked_plan(p, assignment::offsets);
    const plan colored = checked_plan(p, assignment::coloring);
    CHECK(offsets.saved.footprint_bytes <= offsets.saved.coloring_bytes);
    CHECK(colored.saved.arenas <= colored.saved.coloring_arenas);
    CHECK(colored.saved.footprint_bytes <= colored.saved.coloring_bytes);
    CHECK(offsets.grad.footprint_bytes <= offsets.grad.coloring_bytes);
    CHECK(offsets.saved.footprint_bytes >= offsets.saved.lower_bound_bytes);
  }
}

TEST_CASE("a frame needs the max over its branches; the naive figure is their sum", "[planner][sizes]") {
  problem p = uniform({schedule::one_f_one_b(2, 0, 4)}, {2});
  p.branches = {{"cp1", 10 * MiB, 4 * MiB}, {"cp2", 30 * MiB, 2 * MiB}};
  p.overrides = {{0, 1, "cp1", 50 * MiB}};
  const plan result = checked_plan(p, assignment::offsets);
  REQUIRE(result.frames.size() == 4);  // 2 slots x 2 layers
  CHECK(result.frames[0].bytes == 30 * MiB);
  CHECK(result.frames[1].bytes == 50 * MiB);
  CHECK(result.saved.naive_bytes == 2 * (10 + 50 + 30 + 30) * MiB);
  CHECK(result.saved.footprint_bytes == 2 * 80 * MiB);
  CHECK(result.grad.naive_bytes == 2 * (4 + 2) * MiB);
  CHECK(result.grads.size() == 2);
  CHECK(result.grads[0].bytes == 4 * MiB);

  p.alignment = 1 * MiB;
  p.branches[0].saved_per_layer = 10 * MiB + 1;
  CHECK(make_plan(p, assignment::offsets).frames[0].bytes == 30 * MiB);
  p.branches[1].saved_per_layer = 1;
  CHECK(make_plan(p, assignment::offsets).frames[0].bytes == 11 * MiB);  // rounded up to the alignment
}

TEST_CASE("chunks with zero layers take no frames and return no gradients", "[planner]") {
  const problem p = uniform({schedule::interleaved(2, 0, 4, 2, 2)}, {0, 3});
  const plan result = checked_plan(p, assignment::offsets);
  CHECK(result.frames.size() == static_cast<std::size_t>(result.slots) * 3);
  for (const planned_frame& f : result.frames) CHECK(f.chunk == 1);
  for (const planned_grad& g : result.grads) CHECK(g.chunk == 1);
  CHECK(checked_plan(p, assignment::coloring).saved.arenas >= 3);

  // No layers anywhere: nothing to place, and nothing breaks (the fuzzer's first find).
  const problem empty = uniform({schedule::one_f_one_b(2, 0, 4)}, {0});
  for (assignment mode : {assignment::offsets, assignment::coloring}) {
    const plan nothing = checked_plan(empty, mode);
    CHECK(nothing.frames.empty());
    CHECK(nothing.grads.empty());
    CHECK(nothing.saved.footprint_bytes == 0);
  }
}

TEST_CASE("frame_index finds every frame and gradient of chunks with different layer counts, none included", "[planner]") {
  for (slot_rule rule : {slot_rule::mod, slot_rule::schedule}) {
    problem p = uniform({schedule::interleaved(4, 1, 8, 4, 4)}, {2, 0, 3, 1});
    p.rule = rule;
    const plan result = checked_plan(p, assignment::offsets);
    const frame_index frame_at(result);
    std::size_t seen = 0;
    std::size_t grads_seen = 0;
    for (int c = 0; c < result.chunks; ++c) {
      for (int s = 0; s < result.slots; ++s) {
        if (result.layers_per_chunk[static_cast<std::size_t>(c)] > 0) {
          const std::size_t g = frame_at.gradient(static_cast<std::size_t>(c), static_cast<std::size_t>(s));
          REQUIRE(g < result.grads.size());
          CHECK(std::tie(result.grads[g].chunk, result.grads[g].slot) == std::tie(c, s));
          ++grads_seen;
        }
        for (int l = 0; l < result.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
          const std::size_t i = frame_at(static_cast<std::size_t>(c), static_cast<std::size_t>(s), static_cast<std::size_t>(l));
          REQUIRE(i < result.frames.size());
          CHECK(std::tie(result.frames[i].chunk, result.frames[i].slot, result.frames[i].layer) == std::tie(c, s, l));
          ++seen;
        }
      }
    }
    CHECK(seen == result.frames.size());
    CHECK(grads_seen == result.grads.size());
  }
}

TEST_CASE("too few slots fails naming the schedule and the frame", "[planner][errors]") {
  problem p = uniform({schedule::one_f_one_b(4, 0, 8)}, {1});
  p.slots = 3;
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("schedule '1f1b pp=4 rank=0 microbatches=8', entry 3 (order id 1): the forward of chunk 0 "
                                  "microbatch 3 lands on frame (chunk 0, slot 0) still alive for microbatch 0: slot "
                                  "period is shorter than the schedule's liveness; use at least 4 slots"));
  p.slots = 5;  // more slots than needed is valid
  CHECK(checked_plan(p, assignment::offsets).slots == 5);
}

TEST_CASE("bad planner input is rejected with what to change", "[planner][errors]") {
  problem p = uniform({schedule::one_f_one_b(2, 0, 4)}, {2});
  problem q = p;
  q.branches.clear();
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("no branch given"));
  q = p;
  q.branches.push_back(q.branches.front());
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("two branches are named 'cp1'"));
  q = p;
  q.layers_per_chunk = {1, 2};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("2 layer counts given for 1 chunk(s) (problem::layers_per_chunk; --layers in graphpool-plan)"));
  q = p;
  q.layers_per_chunk = {-1};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("cannot be negative"));
  q = p;
  q.overrides = {{0, 2, "cp1", 1}};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("override chunk=0,layer=2,branch=cp1 (problem::overrides; --frame-bytes in graphpool-plan): chunk 0 has 2 layer(s), 0-based: layer=0..1"));
  q = p;
  q.overrides = {{1, 0, "cp1", 1}};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("override chunk=1,layer=0,branch=cp1 (problem::overrides; --frame-bytes in graphpool-plan): the schedules have 1 chunk(s), 0-based: chunk=0..0"));
  q = p;
  q.overrides = {{0, 0, "cp9", 1}};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("override chunk=0,layer=0,branch=cp9 (problem::overrides; --frame-bytes in graphpool-plan): branch 'cp9' is not declared"));
  q = p;
  q.branches[0].saved_per_layer = static_cast<std::size_t>(-1);
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("branch 'cp1' saved bytes of 18446744073709551615 bytes is more than"));
  q = p;
  q.overrides = {{0, 0, "cp1", std::size_t{1} << 41}};
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("override for branch 'cp1' of 2199023255552 bytes"));
  q = p;
  q.alignment = 100;
  CHECK_THROWS_WITH(make_plan(q, assignment::offsets), contains_text("alignment 100 is not a power of two"));
}

TEST_CASE("TransformerEngine slot tuples follow Megatron-LM's fill rule", "[planner][te]") {
  problem p = uniform({schedule::interleaved(2, 0, 5, 2, 3)}, {2, 1});
  p.branches = {{"cp1", 8 * MiB, 1 * MiB}, {"cp2", 4 * MiB, 1 * MiB}};
  const plan result = checked_plan(p, assignment::coloring);
  const std::vector<te_slot> tuples = te_slots(result);
  const int slots = result.slots;
  REQUIRE(slots == 5);
  CHECK(tuples.size() == 2 * 5 * (2 + 1));  // branches x microbatches x layers over chunks
  std::map<std::tuple<int, int, int>, std::size_t> arena_of;  // (chunk, io_slot, layer) -> saved_arena
  std::size_t i = 0;
  for (int v = 0; v < 2; ++v) {
    for (int c = 0; c < 2; ++c) {
      for (int m = 0; m < 5; ++m) {
        for (int l = 0; l < (c == 0 ? 2 : 1); ++l, ++i) {
          const te_slot& t = tuples[i];
          CHECK(t.chunk == c);
          CHECK(t.layer == l);
          CHECK(t.io_slot == m % slots);
          CHECK(t.branch == v * slots + m % slots);
          CHECK(t.warmup_group == v * 3 + (c == 0 ? 0 : 2) + l);
          const auto key = std::make_tuple(c, t.io_slot, l);
          if (arena_of.count(key) == 1) CHECK(arena_of[key] == t.saved_arena);  // branches share a slot's arena
          arena_of[key] = t.saved_arena;
        }
      }
    }
  }
  // The tuples' arenas are the coloring's: frames alive together never share one.
  for (const planned_frame& f : result.frames) {
    CHECK(arena_of.at(std::make_tuple(f.chunk, f.slot, f.layer)) == f.color);
  }
  CHECK_THAT(te_slots_text(tuples), contains_text("(saved_arena, io_slot, branch, chunk, layer, warmup_group, grad_arena)"));
}

TEST_CASE("the report and JSON carry the figures", "[planner][report]") {
  const plan result = make_plan(uniform({schedule::one_f_one_b(2, 0, 4)}, {1}, 1 * MiB), assignment::offsets);
  const std::string json = to_json(result);
  for (const char* key : {"\"slots\": 2", "\"footprint_bytes\": 2097152", "\"lower_bound_bytes\": 2097152",
                          "\"live_bound_bytes\": 2097152", "\"naive_bytes\": 2097152", "\"coloring_bytes\": 2097152",
                          "{\"chunk\": 0, \"slot\": 1, \"layer\": 0, \"arena\": 0, \"offset\": 1048576, \"bytes\": 1048576, \"color\": 1}"}) {
    CHECK_THAT(json, contains_text(key));
  }
  CHECK_THAT(summary_table(result), contains_text("footprint / bound           1.000"));
}

TEST_CASE("the clique search is exact: it matches brute force on random graphs", "[planner][bounds]") {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + random() % 13;
    conflict_graph graph(n);
    std::vector<std::size_t> weights(n);
    for (std::size_t v = 0; v < n; ++v) weights[v] = random() % 4 == 0 ? 0 : 1 + random() % 9;
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) {
        if (random() % 3 != 0) graph.add_conflict(a, b);
      }
    }
    std::size_t best = 0;
    for (std::uint32_t set = 1; set < (1U << n); ++set) {
      bool is_clique = true;
      std::size_t weight = 0;
      for (std::size_t a = 0; a < n && is_clique; ++a) {
        if (!((set >> a) & 1U)) continue;
        weight += weights[a];
        for (std::size_t b = a + 1; b < n; ++b) is_clique = is_clique && (!((set >> b) & 1U) || graph.conflicts(a, b));
      }
      if (is_clique) best = std::max(best, weight);
    }
    const clique found = max_weight_clique(graph, weights);
    INFO("trial " << trial);
    CHECK(found.exact);
    CHECK(found.weight == best);
    for (std::size_t a : found.vertices) {
      for (std::size_t b : found.vertices) CHECK((a == b || graph.conflicts(a, b)));
    }
  }
}

TEST_CASE("placements and colorings of random graphs are valid", "[planner][placement]") {
  std::mt19937 random(11);
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t n = 2 + random() % 30;
    conflict_graph graph(n);
    std::vector<std::size_t> weights(n);
    for (std::size_t v = 0; v < n; ++v) weights[v] = random() % 100;
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) {
        if (random() % 2 == 0) graph.add_conflict(a, b);
      }
    }
    std::vector<std::size_t> order(n);
    for (std::size_t v = 0; v < n; ++v) order[v] = v;
    std::shuffle(order.begin(), order.end(), random);
    const std::size_t bound = max_weight_clique(graph, weights).weight;
    const coloring base = dsatur(graph, weights);
    for (const placement& p : {place_in_order(graph, weights, order, fit::first), place_in_order(graph, weights, order, fit::best),
                               best_placement(graph, weights, {order}, bound)}) {
      CHECK(p.footprint >= bound);
      for (std::size_t a = 0; a < n; ++a) {
        CHECK(p.offsets[a] + weights[a] <= p.footprint);
        for (std::size_t b = a + 1; b < n; ++b) {
          const bool overlap = weights[a] > 0 && weights[b] > 0 && p.offsets[a] < p.offsets[b] + weights[b] &&
                               p.offsets[b] < p.offsets[a] + weights[a];
          CHECK_FALSE((graph.conflicts(a, b) && overlap));
        }
      }
    }
    const coloring best = best_coloring(graph, weights, base);
    CHECK(best.arenas() <= base.arenas());
    CHECK(best.bytes <= base.bytes);
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) CHECK_FALSE((graph.conflicts(a, b) && best.colors[a] == best.colors[b]));
    }
  }
}
