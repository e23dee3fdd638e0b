// The README's first example: four variants (CP = 1, 2, 4, 8) of one layer, each captured once,
// replayed in any order; memory is the largest variant's, not the sum. Exit 77 without a GPU.

#include <cstdio>

#include <graphpool/graphpool.hpp>

// Forward: out = sum of the tokens' inputs (identical layout in every variant); saved = 2 * input.
__global__ void layer_forward(const float* input, float* work, float* saved, float* out, int tokens) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < tokens * 1024; i += gridDim.x * blockDim.x) {
    work[i] = 2.0f * input[i];
    saved[i] = work[i];
    if (i % 1024 == 0) out[i / 1024 % 16384] = work[i];
  }
}

// Backward: checks that what the forward saved is still there.
__global__ void layer_backward(const float* input, const float* saved, int tokens, unsigned* errors) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < tokens * 1024; i += gridDim.x * blockDim.x) {
    if (saved[i] != 2.0f * input[i]) atomicAdd(errors, 1u);
  }
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("variants: no CUDA device, nothing to run (skipped)");
    return 77;
  }
  cudaStream_t stream = nullptr;
  float* input = nullptr;
  unsigned* errors = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaMalloc(&input, 16384 * 1024 * sizeof(float));
  cudaMemset(input, 0x3f, 16384 * 1024 * sizeof(float));
  cudaMalloc(&errors, sizeof(unsigned));
  cudaMemset(errors, 0, sizeof(unsigned));

  // [readme]
  graphpool::cuda_pool_resource pool;                                   // owns a cudaMemPool_t
  graphpool::variant_graphs graphs(pool, {"cp1", "cp2", "cp4", "cp8"});  // one layer, four variants
  graphs.capture(stream,
      [&](auto& f) {  // the forward of one variant: captured once, at planned addresses
        const int tokens = 16384 >> f.branch().index;  // the sequence split by CP
        auto* out = static_cast<float*>(f.allocate_output(16384 * sizeof(float)));  // one address for all
        auto* saved = static_cast<float*>(f.allocate_saved(tokens * 1024 * sizeof(float)));  // for backward
        auto* work = static_cast<float*>(f.allocate_transient(tokens * 1024 * sizeof(float)));  // memory node
        layer_forward<<<256, 256, 0, f.stream()>>>(input, work, saved, out, tokens);
        f.free_transient(work);
      },
      [&](auto& f) {  // its backward reads what its forward saved
        const int tokens = 16384 >> f.branch().index;
        layer_backward<<<256, 256, 0, f.stream()>>>(input, static_cast<float*>(f.saved(0)), tokens, errors);
      });
  for (const char* variant : {"cp4", "cp1", "cp8", "cp2", "cp1"}) {  // any variant, any order
    graphs.forward(0, graphs.branch(variant), stream);  // microbatch 0 runs this variant
    graphs.backward(0, graphs.branch(variant), stream);
  }
  std::puts(graphs.summary().c_str());  // one reservation: the largest variant, not the sum
  // [/readme]

  unsigned host_errors = 0;
  cudaMemcpyAsync(&host_errors, errors, sizeof(unsigned), cudaMemcpyDeviceToHost, stream);
  const cudaError_t status = cudaStreamSynchronize(stream);
  std::printf("%s; saved values that changed before their backward: %u\n", cudaGetErrorName(status), host_errors);
  return status == cudaSuccess && host_errors == 0 ? 0 : 1;
}
