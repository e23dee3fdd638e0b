#pragma once
/// @file arena_records.hpp
/// @brief What an arena_allocator records of its declarations, and what an arena needs from them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graphpool/memory/arena_statistics.hpp"
#include "graphpool/memory/branch_view.hpp"

namespace graphpool::detail {

/// @brief A declared slot: its arena, where its branches start inside it, and the branches as placed.
struct slot_record {
  std::string name;
  std::uint32_t arena = 0;
  std::size_t offset = 0;  // where the slot's branches start inside the arena
  std::vector<placed_branch> branches;
};

/// @brief A declared arena: the slots it holds and, once reserved, where it sits in the reservation.
struct arena_record {
  std::string name;
  std::vector<std::uint32_t> slots;
  std::size_t offset = 0;  // where the arena starts inside the one reservation; set by reserve()
  std::size_t bytes = 0;
  std::size_t alignment = 1;
};

/// @brief The arena's size, alignment and window count: the max over the branches of its slots (in
/// `slots`, every slot declared), each at its slot's offset. The first branch seen sets the size; a
/// later one only when strictly larger.
[[nodiscard]] inline arena_statistics need_of(const arena_record& arena, const std::vector<slot_record>& slots) {
  arena_statistics need;
  need.name = arena.name;
  need.slots = arena.slots.size();
  bool sized = false;
  for (std::uint32_t s : arena.slots) {
    const slot_record& slot = slots[s];
    need.windows = std::max(need.windows, slot.branches.size());
    for (const placed_branch& b : slot.branches) {
      need.alignment = std::max(need.alignment, alignment_of(b.layout));
      const std::size_t end = slot.offset + b.extent;
      if (!sized || end > need.bytes) {
        need.bytes = end;
        need.largest_slot = slot.name;
        need.largest_branch = b.name;
        sized = true;
      }
    }
  }
  return need;
}

}  // namespace graphpool::detail
