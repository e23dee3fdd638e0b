// The GPU suite's main: exit 77 (CTest: skipped) with one line when there is no CUDA device.

#include <cuda_runtime_api.h>

#include <cstdio>

#if GRAPHPOOL_CATCH_MAJOR < 3
#define CATCH_CONFIG_RUNNER
#endif
#include "catch.hpp"

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("graphpool_gpu_tests: skipped, no CUDA device (cudaGetDeviceCount: %s, %d device(s))\n",
                status == cudaSuccess ? "ok" : cudaGetErrorString(status), devices);
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
