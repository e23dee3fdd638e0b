// A small training runtime on graphpool, as a real one would use it.
//
// One pipeline rank (PP 4, rank 0, VPP 2, 8 microbatches, interleaved order from the planner), two
// chunks of two MLP layers (cuBLAS GEMMs and our own kernels), forward and backward, tensors saved for
// backward, parameter gradients accumulated over the microbatches, then an SGD step. Each microbatch
// runs a random variant (CP = 1, 2, 4, 8: the same layers on 16384 / CP tokens, fixed seed).
//
// The step runs five ways, each for real, and prints their device memory side by side:
//   eager            no graphs (the reference the others must match bit for bit)
//   pool per branch  a graphpool bank per variant, each on its own cudaMemPool_t
//   one shared pool  a bank per variant, all on one cudaMemPool_t
//   graphpool/pool   one variant_graphs for every variant, on a cudaMemPool_t
//   graphpool/pages  the same on shared physical pages (a window per variant)
// and the planner's bound. Final weights are compared bitwise with the eager run.
//
// usage: graphpool_runtime [--json PATH] [--require-gpu]
// Without a GPU it says so and prints the plan (exit 0; 77 with --require-gpu).

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <graphpool/graphpool.hpp>

#include "model.cuh"

namespace {

using namespace graphpool;
using namespace runtime;

constexpr int pipeline = 4;
constexpr int rank = 0;
constexpr int chunks = 2;
constexpr int group = 4;
constexpr int microbatches = 8;
constexpr int layers_per_chunk = 2;
constexpr std::size_t MiB = std::size_t{1} << 20;
const std::vector<std::string> variants{"cp1", "cp2", "cp4", "cp8"};

int tokens_of(std::size_t variant) { return full_tokens >> variant; }
// A bank may hold one variant only (its branch 0): a captured layer learns its variant from the name.
int tokens_of(const std::string& variant) { return full_tokens / std::stoi(variant.substr(2)); }
std::size_t activation_bytes(int tokens) { return static_cast<std::size_t>(hidden) * tokens * sizeof(float); }
std::size_t ffn_bytes(int tokens) { return static_cast<std::size_t>(ffn) * tokens * sizeof(float); }

plan::schedule rank_order() { return plan::schedule::interleaved(pipeline, rank, microbatches, chunks, group); }

// The variant each microbatch runs (fixed seed).
std::vector<std::size_t> variant_of_microbatch() {
  std::mt19937 random(2026);
  std::vector<std::size_t> chosen(microbatches);
  for (std::size_t& v : chosen) v = random() % variants.size();
  return chosen;
}

// What a pipeline's point-to-point transfers would fill: a microbatch's activations sent from chunk 0 to
// chunk 1, and the gradient sent back. Runtime-owned, the same in every design.
struct mailboxes {
  explicit mailboxes(cudaStream_t s) : stream(s) {
    float** const buffers[] = {&input, &receive, &gradient_receive};
    for (float** p : buffers) check_cuda(cudaMalloc(p, activation_bytes(full_tokens)), "mailbox");
    for (int m = 0; m < microbatches; ++m) {
      check_cuda(cudaMalloc(&activations[m], activation_bytes(full_tokens)), "mailbox");
      check_cuda(cudaMalloc(&gradients[m], activation_bytes(full_tokens)), "mailbox");
    }
  }
  ~mailboxes() {
    float* const buffers[] = {input, receive, gradient_receive};
    for (float* p : buffers) cudaFree(p);
    for (int m = 0; m < microbatches; ++m) {
      cudaFree(activations[m]);
      cudaFree(gradients[m]);
    }
  }
  void send(float* to, const void* from, int tokens) const {
    check_cuda(cudaMemcpyAsync(to, from, activation_bytes(tokens), cudaMemcpyDeviceToDevice, stream), "send");
  }
  cudaStream_t stream;
  float* input = nullptr;             // chunk 0 layer 0 reads the microbatch's tokens here
  float* receive = nullptr;           // chunk 1 layer 0 reads chunk 0's output here
  float* gradient_receive = nullptr;  // chunk 0's last layer reads chunk 1's returned gradient here
  float* activations[microbatches] = {};
  float* gradients[microbatches] = {};
};

// The bodies one layer runs when captured: the same functions the eager reference calls.
struct layer_bodies {
  cublasHandle_t blas;
  const parameters& weights;
  const mailboxes& boxes;

  void forward(frame_capture& f) const {
    const int tokens = tokens_of(f.branch_name());
    const std::size_t l = f.layer().index;
    const float* input = l > 0 ? static_cast<const float*>(f.output(layer_id{static_cast<std::uint32_t>(l - 1)}, 0))
                               : (f.chunk().index == 0 ? boxes.input : boxes.receive);
    forward_buffers b{input,
                      static_cast<float*>(f.allocate_saved(activation_bytes(tokens))),
                      static_cast<float*>(f.allocate_saved(ffn_bytes(tokens))),
                      static_cast<float*>(f.allocate_saved(ffn_bytes(tokens))),
                      // outputs are one layout for every variant: sized for the largest
                      static_cast<float*>(f.allocate_output(activation_bytes(full_tokens)))};
    layer_forward(blas, f.stream(), weights[f.chunk().index * layers_per_chunk + l], b, tokens);
  }

  void backward(frame_capture& f) const {
    const int tokens = tokens_of(f.branch_name());
    const std::size_t l = f.layer().index;
    const bool last_layer = l + 1 == layers_per_chunk;
    float* loss = nullptr;
    const float* dy = nullptr;
    if (!last_layer) {
      dy = static_cast<const float*>(f.gradient(layer_id{static_cast<std::uint32_t>(l + 1)}, 0));
    } else if (f.chunk().index + 1 == chunks) {
      loss = static_cast<float*>(f.allocate_transient(activation_bytes(tokens)));
      loss_gradient(f.stream(), static_cast<const float*>(f.output(0)), loss, tokens);
      dy = loss;
    } else {
      dy = boxes.gradient_receive;
    }
    auto* da = static_cast<float*>(f.allocate_transient(ffn_bytes(tokens)));
    backward_buffers b{dy,
                       static_cast<const float*>(f.saved(0)),
                       static_cast<const float*>(f.saved(1)),
                       static_cast<const float*>(f.saved(2)),
                       da,
                       static_cast<float*>(f.allocate_gradient(activation_bytes(tokens)))};
    layer_backward(blas, f.stream(), weights[f.chunk().index * layers_per_chunk + l], b, tokens);
    f.free_transient(da);
    if (loss != nullptr) f.free_transient(loss);
  }
};

// How a design launches a microbatch's chunk and finds its boundary tensors.
struct launcher {
  virtual ~launcher() = default;
  virtual void forward(int chunk, int microbatch, std::size_t variant) = 0;
  virtual void backward(int chunk, int microbatch, std::size_t variant) = 0;
  [[nodiscard]] virtual const void* chunk_output(int chunk, int microbatch, std::size_t variant) const = 0;
  [[nodiscard]] virtual const void* chunk_input_gradient(int chunk, int microbatch, std::size_t variant) const = 0;
  /// @return the bytes reserved for frames (0 without graphpool).
  [[nodiscard]] virtual std::size_t reserved() const { return 0; }
  /// @return the graphs captured (0 without graphpool).
  [[nodiscard]] virtual std::size_t graphs() const { return 0; }
};

// One training step in the rank's order; the mailboxes carry what crosses between chunks.
void run_step(launcher& design, const mailboxes& boxes, parameters& weights, cudaStream_t stream) {
  const std::vector<std::size_t> variant = variant_of_microbatch();
  weights.zero_gradients(stream);
  const plan::schedule order = rank_order();
  for (const plan::event& e : order.events()) {
    const std::size_t v = variant[static_cast<std::size_t>(e.microbatch)];
    const int tokens = tokens_of(v);
    if (e.kind == plan::phase::forward) {
      if (e.chunk == 0) {
        fill_input(stream, boxes.input, tokens, static_cast<unsigned>(e.microbatch));
      } else {
        boxes.send(boxes.receive, boxes.activations[e.microbatch], tokens);
      }
      design.forward(e.chunk, e.microbatch, v);
      if (e.chunk + 1 < chunks) boxes.send(boxes.activations[e.microbatch], design.chunk_output(e.chunk, e.microbatch, v), tokens);
    } else {
      if (e.chunk + 1 < chunks) boxes.send(boxes.gradient_receive, boxes.gradients[e.microbatch], tokens);
      design.backward(e.chunk, e.microbatch, v);
      if (e.chunk > 0) boxes.send(boxes.gradients[e.microbatch], design.chunk_input_gradient(e.chunk, e.microbatch, v), tokens);
    }
  }
  weights.sgd(stream, 0.5f);
  check_cuda(cudaStreamSynchronize(stream), "step");
}

// The reference: the same calls on plain buffers, no graphs.
class eager_design final : public launcher {
 public:
  eager_design(cublasHandle_t blas, const parameters& weights, cudaStream_t stream, const mailboxes& boxes)
      : blas_(blas), weights_(weights), stream_(stream), boxes_(boxes) {
    // Every (chunk, microbatch, layer) keeps its own buffers, sized for the microbatch's variant.
    const std::vector<std::size_t> variant = variant_of_microbatch();
    for (int c = 0; c < chunks; ++c) {
      for (int m = 0; m < microbatches; ++m) {
        const int tokens = tokens_of(variant[static_cast<std::size_t>(m)]);
        for (int l = 0; l < layers_per_chunk; ++l) {
          frame& f = at(c, m, l);
          float** const activations[] = {&f.saved_input, &f.output, &f.dx};
          for (float** p : activations) check_cuda(cudaMalloc(p, activation_bytes(tokens)), "eager");
          float** const wide[] = {&f.h, &f.a};
          for (float** p : wide) check_cuda(cudaMalloc(p, ffn_bytes(tokens)), "eager");
        }
      }
    }
    check_cuda(cudaMalloc(&da_, ffn_bytes(full_tokens)), "eager");
    check_cuda(cudaMalloc(&loss_, activation_bytes(full_tokens)), "eager");
  }
  ~eager_design() override {
    for (frame& f : frames_) {
      float* const buffers[] = {f.saved_input, f.output, f.dx, f.h, f.a};
      for (float* p : buffers) cudaFree(p);
    }
    cudaFree(da_);
    cudaFree(loss_);
  }
  void forward(int chunk, int microbatch, std::size_t variant) override {
    for (int l = 0; l < layers_per_chunk; ++l) {
      frame& f = at(chunk, microbatch, l);
      const float* input = l > 0 ? at(chunk, microbatch, l - 1).output : (chunk == 0 ? boxes_.input : boxes_.receive);
      layer_forward(blas_, stream_, weights_[chunk * layers_per_chunk + l], {input, f.saved_input, f.h, f.a, f.output},
                    tokens_of(variant));
    }
  }
  void backward(int chunk, int microbatch, std::size_t variant) override {
    const int tokens = tokens_of(variant);
    for (int l = layers_per_chunk; l-- > 0;) {
      frame& f = at(chunk, microbatch, l);
      const float* dy = nullptr;
      if (l + 1 < layers_per_chunk) {
        dy = at(chunk, microbatch, l + 1).dx;
      } else if (chunk + 1 == chunks) {
        loss_gradient(stream_, f.output, loss_, tokens);
        dy = loss_;
      } else {
        dy = boxes_.gradient_receive;
      }
      layer_backward(blas_, stream_, weights_[chunk * layers_per_chunk + l], {dy, f.saved_input, f.h, f.a, da_, f.dx}, tokens);
    }
  }
  [[nodiscard]] const void* chunk_output(int chunk, int microbatch, std::size_t) const override {
    return at(chunk, microbatch, layers_per_chunk - 1).output;
  }
  [[nodiscard]] const void* chunk_input_gradient(int chunk, int microbatch, std::size_t) const override {
    return at(chunk, microbatch, 0).dx;
  }

 private:
  struct frame {
    float* saved_input = nullptr;
    float* h = nullptr;
    float* a = nullptr;
    float* output = nullptr;
    float* dx = nullptr;
  };
  [[nodiscard]] frame& at(int chunk, int microbatch, int layer) {
    return frames_[(chunk * microbatches + microbatch) * layers_per_chunk + layer];
  }
  [[nodiscard]] const frame& at(int chunk, int microbatch, int layer) const {
    return frames_[(chunk * microbatches + microbatch) * layers_per_chunk + layer];
  }
  cublasHandle_t blas_;
  const parameters& weights_;
  cudaStream_t stream_;
  const mailboxes& boxes_;
  frame frames_[chunks * microbatches * layers_per_chunk];
  float* da_ = nullptr;
  float* loss_ = nullptr;
};

variant_model model_of(std::vector<std::string> branches) {
  return variant_model{std::move(branches), {layers_per_chunk}, {rank_order()}};
}

variant_options planned_options() {
  variant_options options;
  options.rule = plan::slot_rule::schedule;  // slot maps chosen from the order: reaches the live bound
  options.max_copies = 0;
  return options;
}

// graphpool designs: `upstreams` resources (1, or one per variant) and `banks` variant_graphs (1 holding
// every variant, or one per variant, bank b on upstream b % upstreams).
template <class Upstream>
class graph_design final : public launcher {
 public:
  graph_design(std::size_t upstreams, std::size_t banks, const layer_bodies& bodies, cudaStream_t stream) : stream_(stream) {
    for (std::size_t u = 0; u < upstreams; ++u) upstreams_.push_back(std::make_unique<Upstream>());
    for (std::size_t b = 0; b < banks; ++b) {
      banks_.push_back(std::make_unique<variant_graphs<Upstream>>(
          *upstreams_[b % upstreams], model_of(banks == 1 ? variants : std::vector<std::string>{variants[b]}),
          planned_options()));
      banks_.back()->capture(
          stream, [&](frame_capture& f) { bodies.forward(f); }, [&](frame_capture& f) { bodies.backward(f); });
      banks_.back()->begin_step(microbatches);
    }
  }
  void forward(int chunk, int microbatch, std::size_t variant) override {
    bank(variant).forward(chunk_id{static_cast<std::uint32_t>(chunk)}, microbatch, branch(variant), stream_);
  }
  void backward(int chunk, int microbatch, std::size_t variant) override {
    bank(variant).backward(chunk_id{static_cast<std::uint32_t>(chunk)}, microbatch, branch(variant), stream_);
  }
  [[nodiscard]] const void* chunk_output(int chunk, int microbatch, std::size_t variant) const override {
    return bank(variant).output(chunk_id{static_cast<std::uint32_t>(chunk)}, microbatch,
                                layer_id{layers_per_chunk - 1}, branch(variant), 0);
  }
  [[nodiscard]] const void* chunk_input_gradient(int chunk, int microbatch, std::size_t variant) const override {
    return bank(variant).gradient(chunk_id{static_cast<std::uint32_t>(chunk)}, microbatch, layer_id{0}, branch(variant), 0);
  }
  [[nodiscard]] std::size_t reserved() const override {
    std::size_t total = 0;
    for (const auto& b : banks_) total += b->statistics().reserved_bytes;
    return total;
  }
  [[nodiscard]] std::size_t graphs() const override {
    std::size_t total = 0;
    for (const auto& b : banks_) total += b->graphs();
    return total;
  }
  [[nodiscard]] const plan::plan& first_plan() const { return banks_.front()->plan(); }

 private:
  [[nodiscard]] variant_graphs<Upstream>& bank(std::size_t variant) const {
    return *banks_[banks_.size() == 1 ? 0 : variant];
  }
  [[nodiscard]] branch_id branch(std::size_t variant) const {
    return branch_id{static_cast<std::uint32_t>(banks_.size() == 1 ? variant : 0)};
  }
  cudaStream_t stream_;
  std::vector<std::unique_ptr<Upstream>> upstreams_;
  std::vector<std::unique_ptr<variant_graphs<Upstream>>> banks_;
};

std::size_t free_device_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  check_cuda(cudaDeviceSynchronize(), "sync");
  check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return free_bytes;
}

struct row {
  std::string design;
  double setup_ms = 0;             // measure, plan, reserve and capture (allocation for eager)
  double step_ms = 0;              // one training step, host time to completion
  std::size_t graphs = 0;
  std::size_t device_bytes = 0;    // cudaMemGetInfo: set-up, capture and one step, graph memory included
  std::size_t reserved_bytes = 0;  // the frames' reservation
  bool bitwise_equal = false;
};

// Prints the plan the runtime would use, from the model's sizes (no GPU needed).
int print_plan_without_gpu(const char* why) {
  std::printf("graphpool runtime: %s; nothing to run. The plan it would use:\n\n", why);
  plan::problem p;
  p.schedules = {rank_order()};
  p.layers_per_chunk = {layers_per_chunk};
  p.rule = plan::slot_rule::schedule;
  p.max_copies = 0;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const int tokens = tokens_of(v);
    p.branches.push_back({variants[v], activation_bytes(full_tokens) + activation_bytes(tokens) + 2 * ffn_bytes(tokens),
                          layers_per_chunk * activation_bytes(full_tokens)});
  }
  std::printf("%s\n", plan::summary_table(plan::make_plan(p, plan::assignment::offsets)).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  bool require_gpu = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (std::strcmp(argv[i], "--require-gpu") == 0) {
      require_gpu = true;
    } else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--require-gpu]\n", argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    static_cast<void>(cudaGetLastError());
    if (require_gpu) {
      std::printf("graphpool runtime: no CUDA device/driver found (skipped)\n");
      return 77;
    }
    return print_plan_without_gpu("no CUDA device/driver found");
  }
  try {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    cublasHandle_t blas = nullptr;
    check_cublas(cublasCreate(&blas), "cublasCreate");
    check_cublas(cublasSetStream(blas, stream), "cublasSetStream");
    // A workspace of our own, set before any capture: cuBLAS allocates none while capturing, and the
    // eager reference uses the same one (same kernels, same results).
    void* workspace = nullptr;
    const std::size_t workspace_bytes = 32 * MiB;
    check_cuda(cudaMalloc(&workspace, workspace_bytes), "workspace");
    check_cublas(cublasSetWorkspace(blas, workspace, workspace_bytes), "cublasSetWorkspace");
    const mailboxes boxes(stream);

    std::vector<row> rows;
    std::vector<float> reference;
    std::size_t bound = 0;
    auto run = [&](const std::string& name, auto make) {
      check_cuda(cudaDeviceGraphMemTrim(0), "trim");  // graph memory a previous design left cached
      parameters weights(chunks * layers_per_chunk, stream);
      const layer_bodies bodies{blas, weights, boxes};
      const std::size_t before = free_device_bytes();
      {
        const auto start = std::chrono::steady_clock::now();
        auto design = make(bodies);
        check_cuda(cudaDeviceSynchronize(), "set-up");
        const auto built = std::chrono::steady_clock::now();
        run_step(*design, boxes, weights, stream);
        const auto stepped = std::chrono::steady_clock::now();
        row r;
        r.design = name;
        r.setup_ms = std::chrono::duration<double, std::milli>(built - start).count();
        r.step_ms = std::chrono::duration<double, std::milli>(stepped - built).count();
        r.graphs = design->graphs();
        r.device_bytes = before - free_device_bytes();
        r.reserved_bytes = design->reserved();
        if constexpr (std::is_same_v<decltype(design), std::unique_ptr<graph_design<cuda_pool_resource>>>) {
          if (bound == 0) bound = design->first_plan().saved.live_bound_bytes + design->first_plan().grad.live_bound_bytes;
        }
        const std::vector<float> w = weights.weights();
        if (reference.empty()) reference = w;
        r.bitwise_equal = std::memcmp(w.data(), reference.data(), w.size() * sizeof(float)) == 0;
        std::printf("  ran %-18s device %6.0f MiB, frames %6.0f MiB, %3zu graphs set up in %7.1f ms, step %6.1f ms, "
                    "weights %s\n", name.c_str(), static_cast<double>(r.device_bytes) / MiB,
                    static_cast<double>(r.reserved_bytes) / MiB, r.graphs, r.setup_ms, r.step_ms,
                    r.bitwise_equal ? "bitwise equal to eager" : "DIFFER from eager");
        rows.push_back(r);
      }
    };
    std::printf("graphpool runtime: PP %d rank %d, VPP %d, %d microbatches, %d layers per chunk; variants by microbatch:",
                pipeline, rank, chunks, microbatches, layers_per_chunk);
    for (std::size_t v : variant_of_microbatch()) std::printf(" %s", variants[v].c_str());
    std::printf("\n");
    const std::size_t branches = variants.size();
    run("eager", [&](const layer_bodies& b) { return std::make_unique<eager_design>(blas, b.weights, stream, boxes); });
    run("pool per branch", [&](const layer_bodies& b) {
      return std::make_unique<graph_design<cuda_pool_resource>>(branches, branches, b, stream);
    });
    run("one shared pool", [&](const layer_bodies& b) {
      return std::make_unique<graph_design<cuda_pool_resource>>(1, branches, b, stream);
    });
    run("graphpool, pool", [&](const layer_bodies& b) {
      return std::make_unique<graph_design<cuda_pool_resource>>(1, 1, b, stream);
    });
    run("graphpool, pages", [&](const layer_bodies& b) {
      return std::make_unique<graph_design<shared_physical_resource>>(1, 1, b, stream);
    });

    // The graph designs' frames against the planner's bound; the eager row is the reference.
    const row& per_branch = rows[1];
    const row& ours = rows[3];
    std::printf("\n%-22s %14s %14s %10s  %s\n", "design", "device MiB", "frames MiB", "vs ours", "weights");
    for (const row& r : rows) {
      std::printf("%-22s %14.0f %14.0f %9.2fx  %s\n", r.design.c_str(), static_cast<double>(r.device_bytes) / MiB,
                  static_cast<double>(r.reserved_bytes) / MiB,
                  static_cast<double>(r.reserved_bytes) / static_cast<double>(ours.reserved_bytes),
                  r.design == "eager" ? "reference" : (r.bitwise_equal ? "bitwise equal" : "DIFFER"));
    }
    std::printf("%-22s %14s %14.0f %9.2fx\n", "planner's bound", "", static_cast<double>(bound) / MiB,
                static_cast<double>(bound) / static_cast<double>(ours.reserved_bytes));
    const double over_bound = static_cast<double>(ours.reserved_bytes) / static_cast<double>(bound);
    const double per_branch_ratio = static_cast<double>(per_branch.reserved_bytes) / static_cast<double>(ours.reserved_bytes);
    std::printf("\ngraphpool's frames: %.3fx the planner's bound (target at most 1.05); a pool per branch needs %.2fx "
                "graphpool's frames (target at least 1.8)\n", over_bound, per_branch_ratio);
    bool all_equal = true;
    for (const row& r : rows) all_equal = all_equal && r.bitwise_equal;
    std::printf("final weights of every design %s the eager run's\n", all_equal ? "are bitwise equal to" : "DIFFER from");

    if (!json_path.empty()) {
      std::FILE* out = std::fopen(json_path.c_str(), "w");
      if (out == nullptr) throw std::runtime_error("cannot write " + json_path);
      cudaDeviceProp prop{};
      check_cuda(cudaGetDeviceProperties(&prop, 0), "device");
      std::fprintf(out, "{\n  \"benchmark\": \"runtime_example\",\n  \"gpu\": \"%s\",\n  \"guard\": %s,\n  \"rows\": [\n",
                   prop.name, slot_debug_requested() ? "true" : "false");
      for (std::size_t i = 0; i < rows.size(); ++i) {
        std::fprintf(out,
                     "    {\"design\": \"%s\", \"device_bytes\": %zu, \"frames_bytes\": %zu, \"graphs\": %zu, "
                     "\"setup_ms\": %.2f, \"step_ms\": %.2f, \"bitwise_equal\": %s}%s\n",
                     rows[i].design.c_str(), rows[i].device_bytes, rows[i].reserved_bytes, rows[i].graphs,
                     rows[i].setup_ms, rows[i].step_ms, rows[i].bitwise_equal ? "true" : "false",
                     i + 1 < rows.size() ? "," : "");
      }
      std::fprintf(out, "  ],\n  \"planner_bound_bytes\": %zu,\n  \"graphpool_over_bound\": %.4f,\n"
                        "  \"pool_per_branch_over_graphpool\": %.4f\n}\n", bound, over_bound, per_branch_ratio);
      std::fclose(out);
      std::printf("wrote %s\n", json_path.c_str());
    }
    cublasDestroy(blas);
    cudaFree(workspace);
    cudaStreamDestroy(stream);
    return all_equal ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graphpool runtime failed: %s\n", e.what());
    return 1;
  }
}
