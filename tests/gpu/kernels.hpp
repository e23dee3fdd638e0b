#pragma once
// Device helpers for the GPU suite (compiled by nvcc in kernels.cu; callable from plain C++).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace graphpool::testing {

/// Writes a pattern derived from `seed` into the `bytes / 4` words at `ptr` on `stream`.
void fill_pattern(void* ptr, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);

/// Counts the words at `ptr` that differ from fill_pattern's pattern for `seed`; synchronizes `stream`.
std::size_t count_mismatches(const void* ptr, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);

}  // namespace graphpool::testing

namespace graphpool::testing {

/// Adds to `*counter` the words at `ptr` that differ from fill_pattern's pattern for `seed`.
/// Only enqueues a kernel on `stream`: safe inside a stream capture.
void add_mismatches(const void* ptr, std::size_t bytes, std::uint32_t seed, unsigned long long* counter,
                    cudaStream_t stream);

}  // namespace graphpool::testing
