#pragma once
// The tests build with Catch2 2.13 (Debian, CI) and 3.x (the H200 machine); CMake says which.
#if GRAPHPOOL_CATCH_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
