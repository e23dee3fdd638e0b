#pragma once
/// @file alignment.hpp
/// @brief Alignment helpers shared by every layer (no CUDA header).

#include <cstddef>
#include <limits>
#include <string>

#include "graphpool/error.hpp"

namespace graphpool {

/// @brief The alignment CUDA guarantees for device allocations, and graphpool's default.
inline constexpr std::size_t default_alignment = 256;

/// @return true when `alignment` is a non-zero power of two.
[[nodiscard]] constexpr bool is_valid_alignment(std::size_t alignment) noexcept {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

/// @brief Rounds `value` up to a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr std::size_t align_up(std::size_t value, std::size_t alignment) noexcept {
  return (value + alignment - 1) & ~(alignment - 1);
}

namespace detail {

/// @brief `a + b`, or a graphpool::error naming `what` when the sum does not fit in size_t.
[[nodiscard]] inline std::size_t checked_add(std::size_t a, std::size_t b, const std::string& what) {
  if (a > std::numeric_limits<std::size_t>::max() - b) {
    throw error(what + ": size overflows size_t (" + std::to_string(a) + " + " + std::to_string(b) + " bytes)");
  }
  return a + b;
}

/// @brief `align_up(value, alignment)` with the overflow check of checked_add.
[[nodiscard]] inline std::size_t checked_align_up(std::size_t value, std::size_t alignment, const std::string& what) {
  return checked_add(value, alignment - 1, what) & ~(alignment - 1);
}

/// @brief Throws unless `alignment` is a non-zero power of two; `what` names the request for the message.
inline void check_alignment(std::size_t alignment, const std::string& what) {
  if (!is_valid_alignment(alignment)) {
    throw error(what + ": alignment " + std::to_string(alignment) +
                " is not a power of two; use 1, 2, 4, ... (graphpool's default is 256)");
  }
}

}  // namespace detail
}  // namespace graphpool
