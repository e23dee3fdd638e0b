#pragma once
// Helpers for checking placements: do two byte ranges overlap.

#include <cstddef>
#include <cstdint>

namespace graphpool::testing {

[[nodiscard]] inline bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a);
  const auto b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

}  // namespace graphpool::testing
