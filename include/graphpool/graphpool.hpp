#pragma once
/// @file graphpool.hpp
/// @brief Everything graphpool offers, in one include.

#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/host_resource.hpp"
#include "graphpool/memory/layout.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "graphpool/capture.hpp"
#include "graphpool/plan.hpp"
