// A plan checked before use: its parts fit together (check_structure, from_json), it serves the
// schedules replayed (check_replay), and the planner refuses input it cannot plan unambiguously.

#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/load.hpp"
#include "graphpool/plan/plan_check.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"
#include "checked_plan.hpp"

using namespace graphpool::plan;
using graphpool::testing::checked_plan;
using graphpool::testing::contains_text;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

problem one_branch(std::vector<schedule> schedules, slot_rule rule, std::vector<int> layers = {1}) {
  problem p;
  p.schedules = std::move(schedules);
  p.layers_per_chunk = std::move(layers);
  p.branches = {{"cp1", 8 * MiB, 1 * MiB}};
  p.rule = rule;
  return p;
}

// Megatron's 1F1B and the same eight microbatches with every forward first.
const schedule one_f_one_b = schedule::one_f_one_b(4, 0, 8);
const schedule forwards_first = schedule::parse_order("1,1,1,1,1,1,1,1,-1,-1,-1,-1,-1,-1,-1,-1", 0, "forwards first");

}  // namespace

TEST_CASE("check_replay passes the planner's plans for the schedules they were made for", "[plan][check]") {
  for (slot_rule rule : {slot_rule::mod, slot_rule::schedule}) {
    for (assignment mode : {assignment::offsets, assignment::coloring}) {
      const problem p = one_branch({schedule::interleaved(4, 1, 8, 2, 4), schedule::interleaved(4, 1, 12, 2, 4)}, rule, {2});
      const plan made = checked_plan(p, mode);
      CHECK_NOTHROW(check_replay(made, p.schedules));
    }
  }
}

TEST_CASE("check_replay names the schedule a plan does not serve, and the frames that would share bytes",
          "[plan][check]") {
  // A plan for one rank replayed with another rank's schedule of as many microbatches.
  const plan other_rank = checked_plan(one_branch({schedule::one_f_one_b(2, 1, 8)}, slot_rule::mod));
  REQUIRE(other_rank.slots == 1);
  CHECK_THROWS_WITH(check_replay(other_rank, {one_f_one_b}),
                    contains_text("schedule '1f1b pp=4 rank=0 microbatches=8', entry 1 (order id 1): the forward of "
                                  "chunk 0 microbatch 1 lands on frame (chunk 0, slot 0) still alive for microbatch 0: "
                                  "the slot map is invalid for this schedule"));
  CHECK_THROWS_WITH(check_replay(other_rank, {schedule::one_f_one_b(2, 1, 4)}),
                    contains_text("no slot map for a schedule of 4 microbatch(es): the plan was made for 8"));

  const schedule s = schedule::one_f_one_b(2, 0, 4);
  const plan good = checked_plan(one_branch({s}, slot_rule::mod));
  REQUIRE(good.slots == 2);
  plan overlapping = good;
  overlapping.frames[1].offset = overlapping.frames[0].offset;  // slots 0 and 1 are alive together
  CHECK_THROWS_WITH(check_replay(overlapping, {s}),
                    contains_text("plan: frames (chunk 0 slot 0 layer 0) and (chunk 0 slot 1 layer 0) share bytes of arena "
                                  "0 but are alive together in schedule '1f1b pp=2 rank=0 microbatches=4'; plan with "
                                  "every schedule you replay"));
  plan gradients = good;
  gradients.grads[1].offset = gradients.grads[0].offset;  // backwards of slots 0 and 1 run one after the other
  CHECK_THROWS_WITH(check_replay(gradients, {s}),
                    contains_text("plan: the returned gradients of chunk 0 slot 0 and chunk 0 slot 1 share bytes of arena 0 "
                                  "but are alive together in schedule '1f1b pp=2 rank=0 microbatches=4'"));
  // Colors are TransformerEngine's arenas (te_slots): frames alive together need two.
  plan one_color = good;
  one_color.frames[1].color = one_color.frames[0].color;
  CHECK_THROWS_WITH(check_replay(one_color, {s}),
                    contains_text("plan: frames (chunk 0 slot 0 layer 0) and (chunk 0 slot 1 layer 0) share color " +
                                  std::to_string(good.frames[0].color) + " (TransformerEngine's arena in te_slots) but "
                                  "are alive together in schedule '1f1b pp=2 rank=0 microbatches=4'"));
  plan layers = checked_plan(one_branch({s}, slot_rule::mod, {2}));
  layers.frames[1].color = layers.frames[0].color;  // layers 0 and 1 of copy 0
  CHECK_THROWS_WITH(check_replay(layers, {s}),
                    contains_text("plan: frames (chunk 0 slot 0 layer 0) and (chunk 0 slot 0 layer 1) share color " +
                                  std::to_string(layers.frames[0].color) +
                                  " (TransformerEngine's arena in te_slots) but are alive together (layers of one copy)"));
  CHECK_THROWS_WITH(check_replay(good, {schedule::interleaved(2, 0, 4, 2, 2)}),
                    contains_text("plan: schedule 'interleaved pp=2 rank=0 microbatches=4 vpp=2 group=2' runs 2 chunk(s), "
                                  "the plan has 1"));
}

TEST_CASE("with the schedule rule, one microbatch count has one schedule: a runtime picks the map by the count",
          "[plan][check]") {
  CHECK_THROWS_WITH(make_plan(one_branch({one_f_one_b, forwards_first}, slot_rule::schedule), assignment::offsets),
                    contains_text("planner: schedules '1f1b pp=4 rank=0 microbatches=8' and 'forwards first' both run 8 "
                                  "microbatch(es), in different orders; a runtime picks a plan's slot map by its "
                                  "microbatch count, so with the schedule slot rule each count has one schedule: plan "
                                  "them apart, or use the mod rule (m mod S serves both)"));
  // m mod S serves both.
  const problem by_mod = one_branch({one_f_one_b, forwards_first}, slot_rule::mod);
  CHECK_NOTHROW(check_replay(checked_plan(by_mod), by_mod.schedules));
  // The same schedule twice gets one map twice, under its own name each time.
  const schedule again = schedule::parse_order(
      "1,1,1,1,1,1,1,1,-1,-1,-1,-1,-1,-1,-1,-1", 0, "forwards first again");
  const problem twice = one_branch({forwards_first, schedule::one_f_one_b(4, 0, 4), again}, slot_rule::schedule);
  const plan made = checked_plan(twice);
  REQUIRE(made.slot_maps.size() == 3);
  CHECK(made.slot_maps[0].slots == made.slot_maps[2].slots);
  CHECK(made.slot_maps[2].schedule == "forwards first again");
  CHECK(made.slot_maps[1].microbatches == 4);
  CHECK_NOTHROW(check_replay(made, twice.schedules));
}

TEST_CASE("check_structure and from_json refuse parts that do not fit together, naming the part", "[plan][check]") {
  const plan good = checked_plan(one_branch({schedule::one_f_one_b(2, 0, 4)}, slot_rule::mod, {2}));
  CHECK_NOTHROW(check_structure(good, "plan"));
  const auto refused = [&](const char* what, auto change, const std::string& message) {
    INFO(what);
    plan p = good;
    change(p);
    CHECK_THROWS_WITH(check_structure(p, "plan"), contains_text(message));
  };
  refused("short map row", [](plan& p) { p.slot_maps[0].slots[0].resize(1); },
          "plan: the slot map for '1f1b pp=2 rank=0 microbatches=4' gives chunk 0 1 entries for 4 microbatch(es)");
  refused("no map row", [](plan& p) { p.slot_maps[0].slots.clear(); },
          "has 0 row(s) for 4 microbatch(es); it needs one row per chunk (1)");
  refused("slot beyond", [](plan& p) { p.slot_maps[0].slots[0][3] = 7; },
          "names slot 7 of chunk 0; the plan has 2");
  refused("frames out of order", [](plan& p) { std::swap(p.frames[0], p.frames[1]); },
          "plan: frame 0 is (chunk 0 slot 0 layer 1), not (chunk 0 slot 0 layer 0): frames go chunk-major, then slot, "
          "then layer");
  refused("missing frame", [](plan& p) { p.frames.pop_back(); },
          "plan: 3 frame(s), where 1 chunk(s) of 2 slot(s) and their layers need 4");
  refused("offset wraps", [](plan& p) { p.frames[3].offset = ~std::size_t{0}; },
          "plan: frame (chunk 0 slot 1 layer 1): 8388608 bytes at offset 18446744073709551615 run past the end of its "
          "arena");
  refused("arena beyond", [](plan& p) { p.frames[2].arena = 5; }, "plan: frame (chunk 0 slot 1 layer 0) is in arena 5 of 1");
  refused("gradient past its arena", [](plan& p) { p.grads[1].offset = p.grad_arena_bytes[0]; },
          "plan: the gradient of chunk 0 slot 1: 1048576 bytes at offset");
  refused("no gradient", [](plan& p) { p.grads.pop_back(); },
          "plan: 1 returned gradient(s), where the chunks with layers need 2 (one per slot)");
  refused("chunks", [](plan& p) { p.chunks = 5000; }, "plan: 5000 chunk(s); a plan has 1 to 4096");

  // from_json runs the same checks, so what it returns can be read by index (te_slots, capture).
  std::string json = to_json(good);
  const std::string map = "\"map\": [[0, 1, 0, 1]]";
  REQUIRE(json.find(map) != std::string::npos);
  json.replace(json.find(map), map.size(), "\"map\": [[0]]");
  CHECK_THROWS_WITH(from_json(json), contains_text("plan JSON: the slot map for 'schedule of 4 microbatch(es)' gives "
                                                   "chunk 0 1 entries for 4 microbatch(es)"));
  std::string huge_layer = to_json(good);
  huge_layer.replace(huge_layer.find("\"layer\": 1"), 10, "\"layer\": 2147483647");
  CHECK_THROWS_WITH(from_json(huge_layer), contains_text("layer 2147483647 is beyond the 16384 frames a plan may hold"));
  std::string many = to_json(good);
  many.replace(many.find("\"chunks\": 1"), 11, "\"chunks\": 2000000000");
  CHECK_THROWS_WITH(from_json(many), contains_text("plan JSON: 2000000000 chunk(s); a plan has 1 to 4096"));
}

TEST_CASE("from_json refuses a malformed number or a flag that is not true or false, naming where", "[plan][check]") {
  const std::string json = to_json(checked_plan(one_branch({schedule::one_f_one_b(2, 0, 4)}, slot_rule::mod, {2})));
  // The document with the first value of `key` (up to the next ',') written as `value`.
  const auto read_with = [&json](const std::string& key, const std::string& value) {
    std::string changed = json;
    const std::size_t start = changed.find("\"" + key + "\": ");
    REQUIRE(start != std::string::npos);
    const std::size_t from = start + key.size() + 4;
    changed.replace(from, changed.find(',', from) - from, value);
    return from_json(changed);
  };
  CHECK(read_with("slots", "2").slots == 2);
  // Each of these used to read as 2, the text after the digits dropped.
  CHECK_THROWS_WITH(read_with("slots", "2-1"), contains_text("JSON: expected '}' at byte"));
  CHECK_THROWS_WITH(read_with("slots", "2+5"), contains_text("JSON: expected '}' at byte"));
  CHECK_THROWS_WITH(read_with("slots", "0002"), contains_text("JSON: a malformed number (a leading zero) at byte"));
  CHECK_THROWS_WITH(read_with("slots", "-"), contains_text("JSON: a malformed number (a digit must follow '-') at byte"));
  CHECK_THROWS_WITH(read_with("slots", "2."), contains_text("JSON: a malformed number (a digit must follow '.') at byte"));
  CHECK_THROWS_WITH(read_with("slots", "2e"),
                    contains_text("JSON: a malformed number (a digit must follow the exponent) at byte"));
  CHECK_THROWS_WITH(read_with("slots", "2.0"), contains_text("plan JSON slots: expected a non-negative integer, found 2.0"));
  CHECK_NOTHROW(read_with("ratio", "-1.5e+3"));  // a number in full JSON form is still read
  // A flag that is not true or false used to read as false.
  CHECK(read_with("lower_bound_exact", "true").saved.lower_bound_exact);
  CHECK_THROWS_WITH(read_with("lower_bound_exact", "1"), contains_text("plan JSON lower_bound_exact: expected true or false"));
  CHECK_THROWS_WITH(read_with("lower_bound_exact", "\"yes\""),
                    contains_text("plan JSON lower_bound_exact: expected true or false"));
  CHECK_THROWS_WITH(read_with("branches", "[\"cp\\u00zz\"]"), contains_text("JSON: a \\u escape needs four hex digits at byte"));
  CHECK(read_with("branches", "[\"cp\\u0031\"]").branches.front() == "cp1");
}

TEST_CASE("from_json names the figure, and the frame's chunk and slot, it refuses", "[plan][check]") {
  const std::string json = to_json(checked_plan(one_branch({schedule::one_f_one_b(2, 0, 4)}, slot_rule::mod, {2})));
  // The document with the first `from` after `after` written as `to`.
  const auto read_with = [&json](const std::string& after, const std::string& from, const std::string& to) {
    std::string changed = json;
    const std::size_t at = changed.find(from, changed.find(after));
    REQUIRE(at != std::string::npos);
    changed.replace(at, from.size(), to);
    return from_json(changed);
  };
  for (const char* key : {"footprint_bytes", "lower_bound_bytes", "live_bound_bytes", "naive_bytes"}) {
    INFO(key);
    const std::string quoted = std::string("\"") + key + "\": ";
    CHECK_THROWS_WITH(read_with("{", quoted, quoted + "-"),
                      contains_text(std::string("plan JSON ") + key + ": expected a non-negative integer, found -"));
    CHECK_THROWS_WITH(read_with("\"grad\": {", quoted, quoted + "-"),
                      contains_text(std::string("plan JSON grad ") + key + ": expected a non-negative integer, found -"));
  }
  CHECK_THROWS_WITH(read_with("\"frames\"", "\"slot\": 1", "\"slot\": 5"),
                    contains_text("plan JSON frames[2]: chunk 0 slot 5 is beyond the plan's 1 chunk(s) of 2 slot(s)"));
}

TEST_CASE("an offsets plan read from a document without colors cannot give TransformerEngine's arenas", "[plan][check]") {
  for (assignment mode : {assignment::offsets, assignment::coloring}) {
    const plan made = checked_plan(one_branch({schedule::one_f_one_b(4, 0, 8)}, slot_rule::mod, {2}), mode);
    std::string old = to_json(made);  // as documents were written before they carried colors
    for (std::size_t at = old.find(", \"color\": "); at != std::string::npos; at = old.find(", \"color\": ")) {
      old.erase(at, old.find('}', at) - at);
    }
    const plan read_back = from_json(old);
    CHECK_NOTHROW(check_replay(read_back, {schedule::one_f_one_b(4, 0, 8)}));  // its memory is still right
    if (mode == assignment::coloring) {
      CHECK(te_slots_text(te_slots(read_back)) == te_slots_text(te_slots(made)));  // the arenas are the colors
    } else {
      CHECK_THROWS_WITH(te_slots(read_back), contains_text("te_slots: the plan has no coloring (an offsets plan read from "
                                                           "a document written before plans carried each frame's color); "
                                                           "write the plan again"));
    }
  }
}

TEST_CASE("the planner refuses overrides given twice, too many layers and unknown enum values", "[plan][check][errors]") {
  problem p = one_branch({schedule::one_f_one_b(2, 0, 4)}, slot_rule::mod);
  p.overrides = {{0, 0, "cp1", 2 * MiB}, {0, 0, "cp1", 3 * MiB}};
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("planner: overrides 0 and 1 both give chunk=0,layer=0,branch=cp1 saved bytes; give each once"));
  p.overrides.clear();
  p.layers_per_chunk = {20000};
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets),
                    contains_text("planner: the chunks have 20000 layers in all, more than the 16384 frames one plan may hold"));
  p.layers_per_chunk = {1};
  CHECK_THROWS_WITH(make_plan(p, static_cast<assignment>(9)),
                    contains_text("planner: assignment 9 is neither offsets nor coloring"));
  p.rule = static_cast<slot_rule>(7);
  CHECK_THROWS_WITH(make_plan(p, assignment::offsets), contains_text("planner: slot rule 7 is neither mod nor schedule"));
  problem empty_chunk = one_branch({schedule::interleaved(2, 0, 4, 2, 2)}, slot_rule::mod, {0, 1});
  empty_chunk.overrides = {{0, 0, "cp1", 2 * MiB}};
  CHECK_THROWS_WITH(make_plan(empty_chunk, assignment::offsets), contains_text("chunk 0 has no layers"));
}
