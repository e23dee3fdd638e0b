#pragma once
// The example runtime's model: MLP layers with a residual, y = W2 gelu(W1 x) + x, forward and backward
// with cuBLAS GEMMs and our own elementwise kernels. The same functions run eagerly (the reference)
// and inside graphpool's captures, so both compute bit for bit the same thing.
//
// Column-major throughout: a batch of T tokens is an H x T matrix.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace runtime {

constexpr int hidden = 512;          // H
constexpr int ffn = 1024;            // F
constexpr int full_tokens = 16384;   // tokens of one microbatch before context parallelism splits it

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "runtime: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}
inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "runtime: %s failed: cuBLAS status %d\n", what, static_cast<int>(status));
    std::exit(1);
  }
}

__device__ inline float gelu(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
__device__ inline float gelu_grad(float x) {
  const float u = 0.7978845608f * (x + 0.044715f * x * x * x);
  const float t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void gelu_kernel(const float* h, float* a, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    a[i] = gelu(h[i]);
  }
}
__global__ void gelu_backward_kernel(const float* h, float* da, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    da[i] *= gelu_grad(h[i]);
  }
}
__global__ void scale_kernel(const float* x, float* y, float factor, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    y[i] = factor * x[i];
  }
}
__global__ void fill_input_kernel(float* x, long n, unsigned seed) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    unsigned v = static_cast<unsigned>(i) * 2654435761u ^ seed * 40503u;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    x[i] = static_cast<float>(v & 0xffff) / 65536.0f - 0.5f;
  }
}
__global__ void sgd_kernel(float* w, const float* dw, float rate, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    w[i] -= rate * dw[i];
  }
}

inline void launch_check(const char* what) { check_cuda(cudaGetLastError(), what); }

/// One layer's parameters and their accumulated gradients.
struct layer_parameters {
  float* w1 = nullptr;   // F x H
  float* w2 = nullptr;   // H x F
  float* dw1 = nullptr;
  float* dw2 = nullptr;
};

/// Where one forward of a layer reads and writes (graph memory or eager buffers).
struct forward_buffers {
  const float* input;  // H x T: the layer's input
  float* saved_input;  // H x T: a copy kept for the backward
  float* h;            // F x T: pre-activation, saved
  float* a;            // F x T: activation, saved
  float* output;       // H x T: y
};

/// Where one backward of a layer reads and writes.
struct backward_buffers {
  const float* dy;           // H x T: the gradient arriving at the layer's output
  const float* saved_input;  // from the forward
  const float* h;
  const float* a;
  float* da;                 // F x T: scratch
  float* dx;                 // H x T: the gradient the layer returns
};

/// y = W2 gelu(W1 x) + x.
inline void layer_forward(cublasHandle_t blas, cudaStream_t stream, const layer_parameters& p, const forward_buffers& b,
                          int tokens) {
  const long ht = static_cast<long>(hidden) * tokens;
  const long ft = static_cast<long>(ffn) * tokens;
  const float one = 1.0f;
  const float zero = 0.0f;
  check_cuda(cudaMemcpyAsync(b.saved_input, b.input, ht * sizeof(float), cudaMemcpyDeviceToDevice, stream), "save input");
  check_cublas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, ffn, tokens, hidden, &one, p.w1, ffn, b.input, hidden, &zero,
                           b.h, ffn), "W1 x");
  gelu_kernel<<<1024, 256, 0, stream>>>(b.h, b.a, ft);
  launch_check("gelu");
  check_cuda(cudaMemcpyAsync(b.output, b.input, ht * sizeof(float), cudaMemcpyDeviceToDevice, stream), "residual");
  check_cublas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, hidden, tokens, ffn, &one, p.w2, hidden, b.a, ffn, &one,
                           b.output, hidden), "W2 a + x");
}

/// Accumulates dW1, dW2 and returns dx.
inline void layer_backward(cublasHandle_t blas, cudaStream_t stream, const layer_parameters& p,
                           const backward_buffers& b, int tokens) {
  const long ht = static_cast<long>(hidden) * tokens;
  const long ft = static_cast<long>(ffn) * tokens;
  const float one = 1.0f;
  const float zero = 0.0f;
  check_cublas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, hidden, ffn, tokens, &one, b.dy, hidden, b.a, ffn, &one,
                           p.dw2, hidden), "dW2 += dy a^T");
  check_cublas(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, ffn, tokens, hidden, &one, p.w2, hidden, b.dy, hidden, &zero,
                           b.da, ffn), "da = W2^T dy");
  gelu_backward_kernel<<<1024, 256, 0, stream>>>(b.h, b.da, ft);
  launch_check("gelu backward");
  check_cublas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, ffn, hidden, tokens, &one, b.da, ffn, b.saved_input, hidden,
                           &one, p.dw1, ffn), "dW1 += dh x^T");
  check_cuda(cudaMemcpyAsync(b.dx, b.dy, ht * sizeof(float), cudaMemcpyDeviceToDevice, stream), "residual gradient");
  check_cublas(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, hidden, tokens, ffn, &one, p.w1, ffn, b.da, ffn, &one, b.dx,
                           hidden), "dx = W1^T dh + dy");
}

/// The loss gradient at the model's end: d(0.5 |y|^2 / (H T)) / dy.
inline void loss_gradient(cudaStream_t stream, const float* y, float* dy, int tokens) {
  const long ht = static_cast<long>(hidden) * tokens;
  scale_kernel<<<1024, 256, 0, stream>>>(y, dy, 1.0f / static_cast<float>(ht), ht);
  launch_check("loss gradient");
}

/// A microbatch's input tokens (deterministic from its index).
inline void fill_input(cudaStream_t stream, float* x, int tokens, unsigned microbatch) {
  fill_input_kernel<<<1024, 256, 0, stream>>>(x, static_cast<long>(hidden) * tokens, microbatch + 1);
  launch_check("input");
}

/// Every layer's parameters, initialized deterministically, with zeroed gradients.
class parameters {
 public:
  parameters(int layers, cudaStream_t stream) : layers_(static_cast<std::size_t>(layers)) {
    const long count = static_cast<long>(hidden) * ffn;
    unsigned seed = 1000;
    for (layer_parameters& p : layers_) {
      float** const matrices[] = {&p.w1, &p.w2, &p.dw1, &p.dw2};
      for (float** w : matrices) check_cuda(cudaMalloc(w, count * sizeof(float)), "parameters");
      fill_input_kernel<<<1024, 256, 0, stream>>>(p.w1, count, seed++);
      fill_input_kernel<<<1024, 256, 0, stream>>>(p.w2, count, seed++);
      scale_kernel<<<1024, 256, 0, stream>>>(p.w1, p.w1, 0.08f, count);
      scale_kernel<<<1024, 256, 0, stream>>>(p.w2, p.w2, 0.08f, count);
      launch_check("init");
    }
    zero_gradients(stream);
  }
  ~parameters() {
    for (layer_parameters& p : layers_) {
      float* const matrices[] = {p.w1, p.w2, p.dw1, p.dw2};
      for (float* w : matrices) cudaFree(w);
    }
  }
  parameters(const parameters&) = delete;
  parameters& operator=(const parameters&) = delete;

  [[nodiscard]] const layer_parameters& operator[](std::size_t layer) const { return layers_[layer]; }
  void zero_gradients(cudaStream_t stream) {
    const long bytes = static_cast<long>(hidden) * ffn * sizeof(float);
    for (layer_parameters& p : layers_) {
      check_cuda(cudaMemsetAsync(p.dw1, 0, bytes, stream), "zero");
      check_cuda(cudaMemsetAsync(p.dw2, 0, bytes, stream), "zero");
    }
  }
  void sgd(cudaStream_t stream, float rate) {
    const long count = static_cast<long>(hidden) * ffn;
    for (layer_parameters& p : layers_) {
      sgd_kernel<<<1024, 256, 0, stream>>>(p.w1, p.dw1, rate, count);
      sgd_kernel<<<1024, 256, 0, stream>>>(p.w2, p.dw2, rate, count);
      launch_check("sgd");
    }
  }
  /// @return every weight, copied to the host, for the bitwise check.
  [[nodiscard]] std::vector<float> weights() const {
    const std::size_t count = static_cast<std::size_t>(hidden) * ffn;
    std::vector<float> host(count * 2 * layers_.size());
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      check_cuda(cudaMemcpy(host.data() + 2 * l * count, layers_[l].w1, count * sizeof(float), cudaMemcpyDeviceToHost), "weights");
      check_cuda(cudaMemcpy(host.data() + (2 * l + 1) * count, layers_[l].w2, count * sizeof(float), cudaMemcpyDeviceToHost),
                 "weights");
    }
    return host;
  }

 private:
  std::vector<layer_parameters> layers_;
};

}  // namespace runtime
