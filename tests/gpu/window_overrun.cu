// Windows over shared pages are separated by an unmapped gap: a kernel that writes one byte past the
// end of window 0 must fault, not land silently at the start of window 1 (the same physical memory).
// Its own process, because the fault ends the CUDA context. Exit 0: the write faulted; 1: it landed
// or something else failed; 77: no device.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "graphpool/memory/shared_physical_resource.hpp"

__global__ void write_byte(unsigned char* at) { *at = 0xab; }

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("window_overrun: skipped, no CUDA device\n");
    return 77;
  }
  graphpool::shared_physical_resource pages;
  const std::size_t bytes = 2u << 20;
  std::vector<void*> windows = pages.allocate_windows(bytes, 256, 2);
  auto* end_of_first = static_cast<unsigned char*>(windows[0]) + bytes;
  if (cudaMemset(windows[1], 0, 1) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("window_overrun: setup failed\n");
    return 1;
  }
  write_byte<<<1, 1>>>(end_of_first);
  const cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess) {
    unsigned char landed = 0;
    static_cast<void>(cudaMemcpy(&landed, windows[1], 1, cudaMemcpyDeviceToHost));
    std::printf("window_overrun: FAILED, the write past window 0 did not fault (window 1 byte 0 = 0x%02x)\n", landed);
    return 1;
  }
  std::printf("window_overrun: the write one byte past window 0 faulted as it should (%s)\n", cudaGetErrorName(status));
  std::fflush(stdout);
  std::_Exit(0);  // the context is gone: skip destructors that would call into it
}
