#pragma once
// The tests build with Catch2 2.13 (Debian, CI) and 3.x (the H200 machine); CMake says which.
#if GRAPHPOOL_CATCH_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <string>

namespace graphpool::testing {

/// A matcher for "the string contains `text`" under either Catch2 major version.
inline auto contains_text(const std::string& text) {
#if GRAPHPOOL_CATCH_MAJOR >= 3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Matchers::Contains(text);
#endif
}

}  // namespace graphpool::testing
