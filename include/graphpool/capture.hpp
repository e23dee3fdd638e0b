#pragma once
/// @file capture.hpp
/// @brief The capture layer in one include: sessions, persistent memory, the plug-in, the bank, the guard.

#include "graphpool/capture/capture_resource.hpp"
#include "graphpool/capture/capture_session.hpp"
#include "graphpool/capture/graph_bank.hpp"
#include "graphpool/capture/persistent_memory.hpp"
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/capture/variant_graphs.hpp"
