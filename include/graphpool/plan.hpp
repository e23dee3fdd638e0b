#pragma once
/// @file plan.hpp
/// @brief The plan layer in one include: schedules, liveness, assignment, reports. No CUDA header.
///
/// Thread-safety: the layer's functions (make_plan, from_json, the schedule parsers, ...) are pure: they
/// read only their arguments and keep no static or shared state (searches seed their own generators), so
/// any number of threads may call them at once. Its types are values: const use from several threads is
/// safe, changing one while another thread reads it is not.

#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_placement.hpp"
#include "graphpool/plan/frame_sizes.hpp"
#include "graphpool/plan/gradient_parity.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/load.hpp"
#include "graphpool/plan/packed_maps.hpp"
#include "graphpool/plan/placement.hpp"
#include "graphpool/plan/plan_check.hpp"
#include "graphpool/plan/plan_with_maps.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/problem.hpp"
#include "graphpool/plan/region_maps.hpp"
#include "graphpool/plan/report.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"
#include "graphpool/plan/spec.hpp"
