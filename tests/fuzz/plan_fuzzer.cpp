// libFuzzer target: any text as an order, any small model; the only allowed failure is graphpool::error,
// and every plan must pass the independent verifier (tests/host/plan_verifier.hpp): a plan with
// overlapping live frames, a broken slot map or misplaced gradients traps.
// The first byte picks the layers, slots, slot rule and mode; the rest is the order text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"
#include "graphpool/plan/schedule.hpp"
#include "../host/plan_verifier.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 512) return 0;
  const std::uint8_t knobs = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  using namespace graphpool::plan;
  try {
    const schedule order = schedule::parse_order(text);
    if (order.chunks() > 16) return 0;  // keep each run small; larger inputs are the benchmark's job
    problem p;
    p.schedules = {order};
    p.layers_per_chunk = {knobs & 3};
    p.slots = (knobs >> 2) & 3;  // 0 = the peak; 1..3 may be too few, which must be an error
    p.branches = {{"a", 1000u + ((knobs >> 4) & 7) * 997u, 64}, {"b", 3000, 128}};
    if ((knobs & 0x0c) == 0 && (knobs & 0x40) != 0) p.rule = slot_rule::schedule;  // maps chosen from the order
    const plan result = make_plan(p, (knobs & 0x80) != 0 ? assignment::coloring : assignment::offsets);
    if (result.saved.footprint_bytes < result.saved.lower_bound_bytes) __builtin_trap();
    if (result.saved.lower_bound_bytes < result.saved.live_bound_bytes) __builtin_trap();
    if (!graphpool::testing::verify_plan(p, result).ok) __builtin_trap();
    static_cast<void>(to_json(result));
    static_cast<void>(te_slots(result));
  } catch (const graphpool::error&) {
    // Rejected input, with a message: what the parser and planner promise.
  }
  return 0;
}
