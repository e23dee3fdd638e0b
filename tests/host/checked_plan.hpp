#pragma once
// make_plan, then the independent verifier; the test stops (naming the violation) when it fails.

#include <cstddef>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/planner.hpp"
#include "plan_verifier.hpp"

namespace graphpool::testing {

inline plan::plan checked_plan(const plan::problem& p, plan::assignment mode = plan::assignment::offsets) {
  plan::plan result = plan::make_plan(p, mode);
  const verification v = verify_plan(p, result);
  INFO(v.problem);
  REQUIRE(v.ok);
  return result;
}

// The schedule slot rule (no copy limit) on `s` with one layer per chunk, chunk c's frame of
// `chunk_bytes[c]` (one branch, "cp1"; 8 MiB of returned gradient).
inline plan::problem one_layer_chunks(const plan::schedule& s, const std::vector<std::size_t>& chunk_bytes) {
  plan::problem p;
  p.schedules = {s};
  p.layers_per_chunk = {1};
  p.branches = {{"cp1", chunk_bytes.front(), std::size_t{8} << 20}};
  for (std::size_t c = 1; c < chunk_bytes.size(); ++c) {
    p.overrides.push_back({static_cast<int>(c), 0, "cp1", chunk_bytes[c]});
  }
  p.rule = plan::slot_rule::schedule;
  p.max_copies = 0;
  return p;
}

}  // namespace graphpool::testing
