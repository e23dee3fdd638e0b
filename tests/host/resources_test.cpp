// The host resource, the error type, and the resources' fit to CCCL's cuda::mr concepts.

#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "catch.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/host_resource.hpp"
#include "graphpool/memory/vmm_driver.hpp"

// The toolkit's CCCL (3.0 in CUDA 13.0) accepts both resources; checked where the code is compiled.
static_assert(cuda::mr::resource<graphpool::host_resource>);
static_assert(cuda::mr::resource<graphpool::cuda_pool_resource>);
static_assert(cuda::mr::async_resource<graphpool::cuda_pool_resource>);

using graphpool::testing::contains_text;

TEST_CASE("the host resource honours alignment and rejects bad ones", "[resource]") {
  graphpool::host_resource host;
  for (std::size_t alignment : {1, 16, 256, 4096, 65536}) {
    void* ptr = host.allocate_sync(1000, alignment);
    CHECK(reinterpret_cast<std::uintptr_t>(ptr) % alignment == 0);
    std::memset(ptr, 0xab, 1000);
    host.deallocate_sync(ptr, 1000, alignment);
  }
  void* zero = host.allocate(0, 256);
  CHECK(zero != nullptr);
  host.deallocate(zero, 0, 256);
  CHECK_THROWS_WITH(host.allocate_sync(8, 0), contains_text("host_resource::allocate_sync of 8 bytes: alignment 0"));
  CHECK_THROWS_WITH(host.allocate_sync(8, 3), contains_text("alignment 3 is not a power of two"));
  CHECK(graphpool::host_resource{} == graphpool::host_resource{});
  // Aligned operator new may round the size up to the alignment: near SIZE_MAX that wrapped to a tiny
  // block, handed out as if it held the size asked for.
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  CHECK_THROWS_WITH(host.allocate_sync(max, 256), contains_text("host_resource::allocate_sync of 18446744073709551615 "
                                                                "bytes: size overflows size_t"));
  CHECK_THROWS_WITH(host.allocate_sync(max - 100, 256), contains_text("size overflows size_t"));
}

TEST_CASE("graphpool::error carries the CUDA status when there is one", "[error]") {
  const graphpool::error plain("no CUDA here");
  CHECK(plain.cuda_code() == 0);
  CHECK(std::string(plain.what()) == "no CUDA here");
  const graphpool::error cuda("reserve failed", 2);
  CHECK(cuda.cuda_code() == 2);
  const std::string message =
      graphpool::detail::cuda_failure_message(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "file.cpp", 12, "arena 'a'");
  CHECK_THAT(message, contains_text("arena 'a': cudaMalloc(&p, n) failed with cudaErrorMemoryAllocation"));
  CHECK_THAT(message, contains_text("file.cpp:12"));
}

TEST_CASE("the CUDA-checking macro throws with the status and the context", "[error]") {
  auto failing = [] { GRAPHPOOL_CUDA_TRY(cudaErrorInvalidValue, "reserving slot 's'"); };
  try {
    failing();
    FAIL("GRAPHPOOL_CUDA_TRY did not throw");
  } catch (const graphpool::error& e) {
    CHECK(e.cuda_code() == static_cast<int>(cudaErrorInvalidValue));
    CHECK_THAT(std::string(e.what()), contains_text("reserving slot 's': cudaErrorInvalidValue failed with cudaErrorInvalidValue"));
  }
}

namespace {

// What `write(file)` wrote to a temporary file.
template <class Write>
std::string written_by(Write&& write) {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  write(file);
  std::rewind(file);
  std::string text;
  for (int ch = std::fgetc(file); ch != EOF; ch = std::fgetc(file)) text += static_cast<char>(ch);
  std::fclose(file);
  return text;
}

// What `work` printed on stderr (file descriptor 2, where GRAPHPOOL_CUDA_REPORT prints).
template <class Work>
std::string stderr_of(Work&& work) {
  return written_by([&](std::FILE* file) {
    std::fflush(stderr);
    const int saved = dup(2);
    REQUIRE(saved >= 0);
    dup2(fileno(file), 2);
    work();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
  });
}

}  // namespace

TEST_CASE("a failed CUDA call on a noexcept path is reported saying what was being done", "[error]") {
  // Not every caller is a destructor (deallocate, a capture's clean-up): the line says what its caller says.
  CHECK(written_by([](std::FILE* file) {
          graphpool::detail::report_cuda_failure(file, cudaErrorInvalidValue, "cudaFreeAsync(raw, stream)", "file.cpp", 12,
                                                 "cuda_pool_resource::deallocate: returning memory to the pool");
        }) == "graphpool: cuda_pool_resource::deallocate: returning memory to the pool: cudaFreeAsync(raw, stream) "
              "failed with cudaErrorInvalidValue (invalid argument) at file.cpp:12\n");
  const std::string reported = stderr_of([] {
    auto releasing = []() noexcept { GRAPHPOOL_CUDA_REPORT(cudaErrorInvalidValue, "~stand_in: releasing its memory"); };
    releasing();
  });
  CHECK_THAT(reported, contains_text("graphpool: ~stand_in: releasing its memory: cudaErrorInvalidValue failed with "
                                     "cudaErrorInvalidValue (invalid argument) at "));
  CHECK_THAT(reported, !contains_text("in a destructor"));
  // The context is built only when the call fails.
  int built = 0;
  CHECK(stderr_of([&] { GRAPHPOOL_CUDA_REPORT(cudaSuccess, (++built, "never")); }).empty());
  CHECK(built == 0);
}

TEST_CASE("a failed driver call on a noexcept path is reported saying what was being done", "[error]") {
  graphpool::detail::vmm_driver driver;
  auto release = [&](CUresult status) {
    return written_by([&](std::FILE* file) {
      driver.report(status, "cuMemRelease", "physical_block: releasing its pages", file);
    });
  };
  CHECK(release(CUDA_ERROR_INVALID_VALUE) ==
        "graphpool: physical_block: releasing its pages: cuMemRelease failed with CUresult 1\n");
  driver.error_name = [](CUresult, const char** name) {
    *name = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  };
  CHECK(release(CUDA_ERROR_INVALID_VALUE) ==
        "graphpool: physical_block: releasing its pages: cuMemRelease failed with CUDA_ERROR_INVALID_VALUE\n");
  CHECK(release(CUDA_SUCCESS).empty());
}

TEST_CASE("byte counts print in binary units", "[format]") {
  CHECK(graphpool::detail::format_bytes(0) == "0 B");
  CHECK(graphpool::detail::format_bytes(1023) == "1023 B");
  CHECK(graphpool::detail::format_bytes(1536) == "1.50 KiB");
  CHECK(graphpool::detail::format_bytes(std::size_t{256} << 20) == "256.00 MiB");
  CHECK(graphpool::detail::format_bytes(std::size_t{3} << 40) == "3.00 TiB");
}
