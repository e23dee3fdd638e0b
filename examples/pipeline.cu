// The README's second example: one pipeline rank (two chunks, an interleaved schedule, three
// branches) from measurement to launch. Every microbatch runs a random branch; every backward checks
// on the device that what its forward saved is intact. Exit 77 without a GPU.

#include <cstdio>
#include <random>

#include <graphpool/graphpool.hpp>

__global__ void save(unsigned* saved, int words, const unsigned* microbatch, unsigned tag) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) saved[i] = *microbatch * 977u + tag + i;
}
__global__ void check(const unsigned* saved, int words, const unsigned* microbatch, unsigned tag, unsigned* errors) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) {
    if (saved[i] != *microbatch * 977u + tag + i) atomicAdd(errors, 1u);
  }
}
__global__ void set(unsigned* word, unsigned value) { *word = value; }

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("pipeline: no CUDA device, nothing to run (skipped)");
    return 77;
  }
  cudaStream_t stream = nullptr;
  unsigned* words = nullptr;  // [0]: the microbatch a graph runs, [1]: errors
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaMalloc(&words, 2 * sizeof(unsigned));
  cudaMemset(words, 0, 2 * sizeof(unsigned));

  // [readme]
  using namespace graphpool;
  const plan::schedule order = plan::schedule::interleaved(/*pp*/ 4, /*rank*/ 0, /*microbatches*/ 8, /*vpp*/ 2, /*group*/ 4);
  shared_physical_resource pages;  // every branch its own addresses over shared physical pages
  variant_graphs graphs(pages, variant_model{{"cp1", "cp2", "cp4"}, /*layers per chunk*/ {2}, {order}});
  auto words_of = [](auto& f) { return (8 << 20 >> f.branch().index) + 4096 * f.layer().index; };
  auto tag_of = [](auto& f) { return (f.chunk().index * 8 + f.layer().index) * 8 + f.branch().index; };
  graphs.measure(stream,
      [&](auto& f) {  // forward of one layer: an output for the next layer, a tensor saved for backward
        static_cast<void>(f.allocate_output(1 << 20));
        auto* saved = static_cast<unsigned*>(f.allocate_saved(words_of(f) * sizeof(unsigned)));
        save<<<512, 256, 0, f.stream()>>>(saved, words_of(f), words, tag_of(f));
      },
      [&](auto& f) {  // its backward: checks what the forward saved, returns a gradient
        static_cast<void>(f.allocate_gradient(1 << 20));
        check<<<512, 256, 0, f.stream()>>>(static_cast<unsigned*>(f.saved(0)), words_of(f), words, tag_of(f), words + 1);
      });
  std::puts(plan::summary_table(graphs.make_plan()).c_str());  // or use_plan(plan::from_json(...))
  graphs.reserve();                                             // the plan's memory, in one request
  graphs.capture(stream);                                       // 2 x frames x branches graphs, captured once
  std::mt19937 random(42);
  std::vector<branch_id> branch_of(order.microbatches());
  for (branch_id& b : branch_of) b = branch_id{static_cast<std::uint32_t>(random() % 3)};
  graphs.begin_step(order.microbatches());  // this step replays `order`: its slot map
  for (const plan::event& e : order.events()) {
    set<<<1, 1, 0, stream>>>(words, static_cast<unsigned>(e.microbatch));
    const chunk_id chunk{static_cast<std::uint32_t>(e.chunk)};
    if (e.kind == plan::phase::forward) {
      graphs.forward(chunk, e.microbatch, branch_of[e.microbatch], stream);
    } else {
      graphs.backward(chunk, e.microbatch, branch_of[e.microbatch], stream);
    }
  }
  std::puts(graphs.statistics().summary().c_str());
  // [/readme]

  unsigned errors = 0;
  cudaMemcpyAsync(&errors, words + 1, sizeof(unsigned), cudaMemcpyDeviceToHost, stream);
  const cudaError_t status = cudaStreamSynchronize(stream);
  std::printf("%s; saved words that changed before their backward: %u\n", cudaGetErrorName(status), errors);
  return status == cudaSuccess && errors == 0 ? 0 : 1;
}
