#pragma once
/// @file arena_statistics.hpp
/// @brief What an arena_allocator reserves, per arena and in total, against a pool per branch.

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "graphpool/detail/format.hpp"

namespace graphpool {

/// @brief Figures of one arena.
struct arena_statistics {
  std::string name;
  std::size_t bytes = 0;       ///< the arena's size: its largest branch, over every slot it holds
  std::size_t alignment = 1;   ///< the strictest alignment of any part placed in it
  std::size_t slots = 0;       ///< slots that share it
  std::size_t windows = 0;     ///< address windows: the most branches of any of its slots
  std::string largest_slot;    ///< the slot whose branch sets the size
  std::string largest_branch;  ///< that branch
};

/// @brief Figures of a whole arena_allocator.
struct arena_allocator_statistics {
  bool reserved = false;                  ///< true once reserve() has taken the arenas
  std::size_t reserved_bytes = 0;         ///< what reserve() takes from the upstream: every arena, each aligned, in one allocation
                                          ///< (before reserve(), SIZE_MAX where that does not fit in size_t)
  std::size_t upstream_bytes = 0;         ///< what the upstream's own counter grew by at reserve(): reserved_bytes plus its
                                          ///< rounding (a cudaMemPool_t grows in 32 MiB steps, virtual memory in 2 MiB);
                                          ///< 0 when the upstream has no counter
  std::size_t per_branch_pool_bytes = 0;  ///< what a pool per branch needs: every branch of every slot, summed
                                          ///< (SIZE_MAX where the sum does not fit in size_t)
  std::vector<arena_statistics> arenas;

  /// @return a printable table: one line per arena, then the totals and the saving.
  [[nodiscard]] std::string summary() const {
    std::string text = "arena                 bytes        slots  windows  largest (slot / branch)\n";
    for (const arena_statistics& a : arenas) {
      // Names go in whole, however long: only the figures between them are formatted to a width.
      char figures[96];
      std::snprintf(figures, sizeof(figures), "  %-11s  %5zu  %7zu  ", detail::format_bytes(a.bytes).c_str(), a.slots,
                    a.windows);
      text += a.name + std::string(a.name.size() < 20 ? 20 - a.name.size() : 0, ' ') + figures + a.largest_slot + " / " +
              a.largest_branch + "\n";
    }
    text += std::string(reserved ? "reserved: " : "to reserve: ") + detail::format_bytes(reserved_bytes);
    if (upstream_bytes > 0) text += " (the upstream holds " + detail::format_bytes(upstream_bytes) + ")";
    text += "; a pool per branch: " + detail::format_bytes(per_branch_pool_bytes);
    if (reserved_bytes > 0) {
      char ratio[64];
      std::snprintf(ratio, sizeof(ratio), " (%.2fx)", static_cast<double>(per_branch_pool_bytes) /
                                                         static_cast<double>(reserved_bytes));
      text += ratio;
    }
    return text + "\n";
  }
};

}  // namespace graphpool
