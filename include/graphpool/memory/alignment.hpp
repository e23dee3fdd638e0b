#pragma once
/// @file alignment.hpp
/// @brief Alignment helpers shared by the memory layer.

#include <cstddef>
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

/// @brief Throws unless `alignment` is a non-zero power of two; `what` names the request for the message.
inline void check_alignment(std::size_t alignment, const std::string& what) {
  if (!is_valid_alignment(alignment)) {
    throw error(what + ": alignment " + std::to_string(alignment) +
                " is not a power of two; use 1, 2, 4, ... (graphpool's default is 256)");
  }
}

}  // namespace detail
}  // namespace graphpool
