#pragma once
/// @file format.hpp
/// @brief Human-readable byte counts and pointers for messages and summaries (no CUDA header).

#include <cstddef>
#include <cstdio>
#include <string>

namespace graphpool::detail {

/// @return `bytes` in the largest binary unit that keeps it >= 1, e.g. "64.00 MiB", "512 B".
[[nodiscard]] inline std::string format_bytes(std::size_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  }
  return text;
}

/// @return `ptr` as the C library prints it ("0x7f0000001000"), for messages that name a pointer.
[[nodiscard]] inline std::string describe_pointer(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", ptr);
  return text;
}

}  // namespace graphpool::detail
