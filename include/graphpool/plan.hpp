#pragma once
/// @file plan.hpp
/// @brief The plan layer in one include: schedules, liveness, assignment, reports. No CUDA header.

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
