#pragma once
/// @file learned_lower.hpp
/// @brief A layout of one schedule's frames lowered a unit at a time by the conflict-driven search
/// (order_search, learned_layout.hpp), each height searched from the layout before it, in runs whose ties
/// are broken another way each time. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/learned_layout.hpp"

namespace graphpool::plan::detail {

/// Steps in each run of learned_lower at one height (its runs' ties broken another way each time).
inline constexpr std::size_t learned_run_effort = 25'000'000;

/// @return `offsets` (a layout of `frames`) lowered by order_search a unit at a time toward `floor`, each
/// height searched from the layout before it, within `effort` in all; `proven` is set where the search
/// proved the returned layout's top the least (no layout a unit lower). Its time to a layout is
/// heavy-tailed, so each height is tried in runs of at most `run_effort`, each with its first ties broken
/// another way (on the cases CP-SAT settles, runs of 25 million reach the same heights in about half the
/// time one long run takes). Where the runs give up at a height, one run of `proof_effort` more (fresh, so
/// longer than any before it) may still settle it: a proof can need a longer run than a layout does (PP 2
/// rank 0 VPP 4 M 24 of 43/247/157/23 MiB chunks: about 45 million steps). Deterministic: the same layout for
/// the same input.
[[nodiscard]] inline std::vector<std::size_t> learned_lower(const std::vector<frame_interval>& frames,
                                                            std::vector<std::size_t> offsets, std::size_t floor,
                                                            std::size_t effort, bool* proven = nullptr,
                                                            std::size_t run_effort = learned_run_effort,
                                                            std::size_t proof_effort = 0) {
  if (proven != nullptr) *proven = false;
  const std::size_t unit = byte_unit(frames);
  if (frames.empty() || unit == 0) return offsets;
  order_search search(frames);
  std::vector<std::size_t> lower;
  for (std::size_t top = top_of(frames, offsets); top > floor && top >= unit; top = top_of(frames, offsets)) {
    order_verdict verdict = order_verdict::unknown;
    for (unsigned seed = 0; verdict == order_verdict::unknown && effort > 0; ++seed) {
      std::size_t run = std::min(run_effort, effort);
      const std::size_t given = run;
      verdict = search.under(top - unit, offsets, run, lower, seed);
      effort -= given - run;
    }
    if (verdict == order_verdict::unknown && proof_effort > 0) {
      std::size_t run = proof_effort;
      proof_effort = 0;
      verdict = search.under(top - unit, offsets, run, lower);
    }
    if (verdict != order_verdict::found) {
      if (proven != nullptr) *proven = verdict == order_verdict::none;
      break;
    }
    offsets = lower;
  }
  return offsets;
}

}  // namespace graphpool::plan::detail
