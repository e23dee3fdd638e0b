#pragma once
/// @file reservation_layout.hpp
/// @brief Where an arena_allocator's arenas sit in its one upstream request (each sized by its largest
/// branch, aligned, back to back), and the error that names the request when the upstream refuses it.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/arena_records.hpp"
#include "graphpool/memory/arena_statistics.hpp"
#include "graphpool/memory/branch_view.hpp"

namespace graphpool::detail {

/// @brief The one request reserve() makes of the upstream, and where each arena starts inside it.
struct reservation_layout {
  std::vector<std::size_t> offsets;  // per arena: where it starts inside the reservation
  std::size_t total = 0;             // every arena, each aligned, back to back
  std::size_t alignment = 1;         // the strictest arena's
  std::size_t windows = 0;           // address windows: the most branches of any slot
};

/// @brief Sizes every arena (its record's bytes and alignment, from need_of) and lays the arenas out
/// back to back in one reservation, each at its alignment.
/// @throws graphpool::error when a slot has no branch or sits at an offset its parts' alignment does
/// not divide, or when the reservation does not fit in size_t (naming the arena).
[[nodiscard]] inline reservation_layout lay_out_reservation(std::vector<arena_record>& arenas,
                                                            const std::vector<slot_record>& slots) {
  std::size_t total = 0;
  std::size_t alignment = 1;
  std::size_t windows = 0;
  for (const detail::slot_record& s : slots) {
    if (s.branches.empty()) {
      throw error("reserve: slot '" + s.name + "' has no branch; declare at least one branch before reserve()");
    }
    for (const detail::placed_branch& b : s.branches) {
      const std::size_t needed = detail::alignment_of(b.layout);
      if (s.offset % needed != 0) {
        throw error("reserve: slot '" + s.name + "' branch '" + b.name + "' needs " + std::to_string(needed) +
                    "-byte alignment but the slot sits at offset " + std::to_string(s.offset) +
                    " of arena '" + arenas[s.arena].name + "'; place the slot at a multiple of " +
                    std::to_string(needed));
      }
    }
    windows = std::max(windows, s.branches.size());
  }
  std::vector<std::size_t> offsets;
  for (detail::arena_record& a : arenas) {
    const arena_statistics need = detail::need_of(a, slots);
    a.bytes = need.bytes;
    a.alignment = need.alignment;
    total = detail::checked_align_up(total, a.alignment, "reserve: arena '" + a.name + "'");
    offsets.push_back(total);
    total = detail::checked_add(total, a.bytes, "reserve: arena '" + a.name + "'");
    alignment = std::max(alignment, a.alignment);
  }
  return {std::move(offsets), total, alignment, windows};
}

/// @brief reserve()'s error when the upstream refused `total` bytes through `windows` windows (`e`): it
/// names the arenas, the largest of them and the upstream's message, and keeps its CUDA status.
[[noreturn]] inline void upstream_failed(const std::vector<arena_record>& arenas, std::size_t total,
                                         std::size_t windows, const std::exception& e) {
  const auto* cause = dynamic_cast<const error*>(&e);
  const auto largest = std::max_element(arenas.begin(), arenas.end(), [](const auto& a, const auto& b) {
    return a.bytes < b.bytes;
  });
  throw error("reserve: " + std::to_string(arenas.size()) + " arena(s) of " + detail::format_bytes(total) + " (" +
                  std::to_string(total) + " bytes, " + std::to_string(windows) + " window(s); the largest is arena '" +
                  largest->name + "' of " + detail::format_bytes(largest->bytes) +
                  ") could not be taken from the upstream: " + e.what(),
              cause != nullptr ? cause->cuda_code() : 0);
}

}  // namespace graphpool::detail
