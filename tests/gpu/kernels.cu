#include "graphpool/detail/cuda_check.hpp"
#include "kernels.hpp"

namespace graphpool::testing {
namespace {

__host__ __device__ std::uint32_t pattern(std::uint32_t seed, std::size_t i) {
  std::uint32_t x = seed * 0x9e3779b9u ^ static_cast<std::uint32_t>(i) * 0x85ebca6bu;
  x ^= x >> 16;
  return x * 0x7feb352du;
}

__global__ void fill_kernel(std::uint32_t* words, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    words[i] = pattern(seed, i);
  }
}

__global__ void check_kernel(const std::uint32_t* words, std::size_t count, std::uint32_t seed,
                             unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    local += words[i] != pattern(seed, i) ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

__global__ void set_word_kernel(std::uint32_t* word, std::uint32_t value) { *word = value; }

__global__ void fill_token_kernel(std::uint32_t* words, std::size_t count, const std::uint32_t* token, std::uint32_t tag) {
  const std::uint32_t seed = *token * 7919u + tag;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    words[i] = pattern(seed, i);
  }
}

__global__ void check_token_kernel(const std::uint32_t* words, std::size_t count, const std::uint32_t* token,
                                   std::uint32_t tag, unsigned long long* mismatches) {
  const std::uint32_t seed = *token * 7919u + tag;
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    local += words[i] != pattern(seed, i) ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

constexpr unsigned threads = 256;
constexpr unsigned blocks = 1024;

}  // namespace

void fill_pattern(void* ptr, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<std::uint32_t*>(ptr), bytes / 4, seed);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "fill_pattern");
}

void add_mismatches(const void* ptr, std::size_t bytes, std::uint32_t seed, unsigned long long* counter,
                    cudaStream_t stream) {
  check_kernel<<<blocks, threads, 0, stream>>>(static_cast<const std::uint32_t*>(ptr), bytes / 4, seed, counter);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "add_mismatches");
}

std::size_t count_mismatches(const void* ptr, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  unsigned long long* counter = nullptr;
  GRAPHPOOL_CUDA_TRY(cudaMallocAsync(&counter, sizeof(*counter), stream), "count_mismatches");
  GRAPHPOOL_CUDA_TRY(cudaMemsetAsync(counter, 0, sizeof(*counter), stream), "count_mismatches");
  check_kernel<<<blocks, threads, 0, stream>>>(static_cast<const std::uint32_t*>(ptr), bytes / 4, seed, counter);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "count_mismatches");
  unsigned long long host = 0;
  GRAPHPOOL_CUDA_TRY(cudaMemcpyAsync(&host, counter, sizeof(host), cudaMemcpyDeviceToHost, stream), "count_mismatches");
  GRAPHPOOL_CUDA_TRY(cudaFreeAsync(counter, stream), "count_mismatches");
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "count_mismatches");
  return static_cast<std::size_t>(host);
}

void set_word(std::uint32_t* word, std::uint32_t value, cudaStream_t stream) {
  set_word_kernel<<<1, 1, 0, stream>>>(word, value);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "set_word");
}

void fill_from_token(void* ptr, std::size_t bytes, const std::uint32_t* token, std::uint32_t tag, cudaStream_t stream) {
  fill_token_kernel<<<blocks, threads, 0, stream>>>(static_cast<std::uint32_t*>(ptr), bytes / 4, token, tag);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "fill_from_token");
}

void add_mismatches_from_token(const void* ptr, std::size_t bytes, const std::uint32_t* token, std::uint32_t tag,
                               unsigned long long* counter, cudaStream_t stream) {
  check_token_kernel<<<blocks, threads, 0, stream>>>(static_cast<const std::uint32_t*>(ptr), bytes / 4, token, tag,
                                                     counter);
  GRAPHPOOL_CUDA_TRY(cudaGetLastError(), "add_mismatches_from_token");
}

}  // namespace graphpool::testing
