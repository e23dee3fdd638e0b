#pragma once
// make_plan, then the independent verifier; the test stops (naming the violation) when it fails.

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

}  // namespace graphpool::testing
