#pragma once
/// @file variant_options.hpp
/// @brief What variant_graphs is told beside its model: how to plan (assignment, slot rule, copies
/// budget), whether to guard its launches, and how to capture.

#include "graphpool/capture/capture_options.hpp"
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/plan/problem.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool {

/// @brief How variant_graphs plans, guards and captures.
struct variant_options {
  plan::assignment mode = plan::assignment::offsets;  ///< offsets (one reservation) or coloring (an arena per color)
  plan::slot_rule rule = plan::slot_rule::mod;        ///< m mod S, or slot maps chosen from the schedules
  int max_copies = plan::twice_modulo_copies;         ///< copies per chunk with the schedule rule (0: no limit)
  bool guard = slot_debug_requested();                ///< check every launch (on with GRAPHPOOL_SLOT_DEBUG=1)
  capture_options capture;                            ///< stream capture mode, upload after instantiation
};

}  // namespace graphpool
