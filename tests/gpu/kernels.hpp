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

/// Writes `value` to `*word` on `stream` (a kernel: safe inside a capture, ordered with the graphs).
void set_word(std::uint32_t* word, std::uint32_t value, cudaStream_t stream);

/// fill_pattern with the seed `*token * 7919 + tag`, read on the device when the kernel runs: a graph
/// captured once fills what the microbatch written to `token` before its launch should see.
void fill_from_token(void* ptr, std::size_t bytes, const std::uint32_t* token, std::uint32_t tag, cudaStream_t stream);

/// add_mismatches against fill_from_token's pattern for `*token` and `tag`.
void add_mismatches_from_token(const void* ptr, std::size_t bytes, const std::uint32_t* token, std::uint32_t tag,
                               unsigned long long* counter, cudaStream_t stream);

}  // namespace graphpool::testing
