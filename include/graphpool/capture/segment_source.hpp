#pragma once
/// @file segment_source.hpp
/// @brief Which (chunk, slot) frame and branch a segment_pool hands segments from.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"

namespace graphpool {

/// @brief Which frame and branch a segment pool hands segments from.
struct segment_source {
  chunk_id chunk;
  slot_id slot;
  branch_id branch;

  /// @return "chunk 0, slot 1, branch 2 (cp4)".
  [[nodiscard]] std::string describe(const std::vector<std::string>& branches) const {
    return chunk.describe() + ", " + slot.describe() + ", " + branch.describe() + " (" + branches.at(branch.index) + ")";
  }

  /// @throws graphpool::error naming the chunk, slot or branch that lies outside a pool of `chunks` ×
  /// `slots` frames with `branches` branches.
  void check_within(int chunks, int slots, std::size_t branches) const {
    const auto out = [](const char* what, std::uint32_t value, std::size_t count) {
      return error(std::string("segment_pool: ") + what + " " + std::to_string(value) + " is out of range; there are " +
                   std::to_string(count) + " (0-based)");
    };
    if (chunk.index >= static_cast<std::uint32_t>(chunks)) throw out("chunk", chunk.index, static_cast<std::size_t>(chunks));
    if (slot.index >= static_cast<std::uint32_t>(slots)) throw out("slot", slot.index, static_cast<std::size_t>(slots));
    if (branch.index >= branches) throw out("branch", branch.index, branches);
  }
};

}  // namespace graphpool
