// The one path on a GPU: measure -> plan -> reserve -> capture -> launch of a pipeline rank, with
// every backward checking on the device what its forward saved, device memory against the plan,
// the guard from the environment, and a plan read back from JSON.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/graphpool.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"

using namespace graphpool;
using graphpool::testing::add_mismatches_from_token;
using graphpool::testing::contains_text;
using graphpool::testing::device_bytes_taken_by;
using graphpool::testing::device_counter;
using graphpool::testing::fill_from_token;
using graphpool::testing::set_word;
using graphpool::testing::stream_guard;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Device words the graphs read: the microbatch a forward or backward runs, and a mismatch counter.
struct device_state {
  device_state() {
    GRAPHPOOL_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&words), 2 * sizeof(std::uint32_t)), "tokens");
    mismatches.reset();
  }
  ~device_state() { GRAPHPOOL_CUDA_REPORT(cudaFree(words), "~device_state: freeing the tokens"); }
  device_state(const device_state&) = delete;
  device_state& operator=(const device_state&) = delete;
  std::uint32_t* forward_token() const { return words; }
  std::uint32_t* backward_token() const { return words + 1; }
  unsigned long long read() const { return mismatches.read(); }
  std::uint32_t* words = nullptr;
  device_counter mismatches;
};

std::size_t saved_bytes(branch_id b) { return (48 * MiB) >> b.index; }
std::uint32_t tag(const frame_capture& f) { return (f.chunk().index * 16 + f.layer().index) * 16 + f.branch().index; }

variant_graphs<cuda_pool_resource>::body forward_body(const device_state& state) {
  return [&state](frame_capture& f) {
    void* out = f.allocate_output(2 * MiB);
    void* saved = f.allocate_saved(saved_bytes(f.branch()));
    void* work = f.allocate_transient(8 * MiB);
    fill_from_token(work, 8 * MiB, state.forward_token(), tag(f), f.stream());
    fill_from_token(saved, saved_bytes(f.branch()), state.forward_token(), tag(f), f.stream());
    fill_from_token(out, 2 * MiB, state.forward_token(), tag(f), f.stream());
    f.free_transient(work);
  };
}

variant_graphs<cuda_pool_resource>::body backward_body(const device_state& state) {
  return [&state](frame_capture& f) {
    void* gradient = f.allocate_gradient(1 * MiB);
    add_mismatches_from_token(f.saved(0), saved_bytes(f.branch()), state.backward_token(), tag(f), state.mismatches.value,
                              f.stream());
    fill_from_token(gradient, 1 * MiB, state.backward_token(), tag(f), f.stream());
  };
}

const plan::schedule rank_schedule = plan::schedule::interleaved(4, 0, 8, 2, 4);

variant_model pipeline_model() { return variant_model{{"cp1", "cp2", "cp4"}, {1}, {rank_schedule}}; }

template <class Graphs>
void replay(Graphs& graphs, const device_state& state, cudaStream_t stream, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<branch_id> branch_of(8);
  for (branch_id& b : branch_of) b = branch_id{static_cast<std::uint32_t>(random() % 3)};
  graphs.begin_step(8);
  for (const plan::event& e : rank_schedule.events()) {
    const chunk_id chunk{static_cast<std::uint32_t>(e.chunk)};
    const auto microbatch = static_cast<std::uint32_t>(e.microbatch);
    if (e.kind == plan::phase::forward) {
      set_word(state.forward_token(), microbatch, stream);
      graphs.forward(chunk, e.microbatch, branch_of[microbatch], stream);
    } else {
      set_word(state.backward_token(), microbatch, stream);
      graphs.backward(chunk, e.microbatch, branch_of[microbatch], stream);
    }
  }
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "replay");
}

template <class Upstream>
void run_pipeline(Upstream& upstream, plan::assignment mode, std::size_t rounding) {
  stream_guard s;
  device_state state;
  variant_options options;
  options.mode = mode;
  options.guard = true;
  variant_graphs<Upstream> graphs(upstream, pipeline_model(), options);
  graphs.measure(s.stream, forward_body(state), backward_body(state));
  const plan::plan& p = graphs.make_plan();
  const std::size_t used = device_bytes_taken_by([&] { graphs.reserve(); });
  const std::size_t planned = p.saved.footprint_bytes + p.grad.footprint_bytes;
  std::printf("variant_graphs %s, %s: device memory %.1f MiB for a plan of %.1f MiB (%.3fx); live bound %.1f MiB, a pool "
              "per branch %.1f MiB\n",
              graphpool::detail::has_windows<Upstream>::value ? "shared pages" : "pool", plan::to_string(mode),
              static_cast<double>(used) / MiB, static_cast<double>(planned) / MiB,
              static_cast<double>(used) / static_cast<double>(planned), static_cast<double>(p.saved.live_bound_bytes) / MiB,
              static_cast<double>(p.saved.naive_bytes + p.grad.naive_bytes) / MiB);
  CHECK(used <= static_cast<std::size_t>(1.02 * static_cast<double>(planned)) + rounding);
  CHECK(used >= planned / 2);  // the reservation is real memory, not address space
  CHECK(planned < p.saved.naive_bytes);
  graphs.capture(s.stream);
  for (unsigned seed : {1u, 2u, 3u, 4u}) replay(graphs, state, s.stream, seed);
  CHECK(state.read() == 0);
  CHECK(graphs.guard().live() == 0);
  CHECK(graphs.report().streams_used == 1);
}

}  // namespace

TEST_CASE("variant_graphs on a GPU: an interleaved rank with a random branch per microbatch reads back every saved byte",
          "[gpu][variant_graphs]") {
  SECTION("pool upstream, offsets") {
    cuda_pool_resource pool;
    run_pipeline(pool, plan::assignment::offsets, 32 * MiB);
  }
  SECTION("pool upstream, coloring") {
    cuda_pool_resource pool;
    run_pipeline(pool, plan::assignment::coloring, 32 * MiB);
  }
  SECTION("shared pages, offsets") {
    shared_physical_resource pages;
    run_pipeline(pages, plan::assignment::offsets, 2 * MiB);
  }
}

TEST_CASE("variant_graphs on a GPU: the guard from GRAPHPOOL_SLOT_DEBUG refuses a slot wrap (a forward order other "
          "than the model's) and a backward without its forward before enqueue", "[gpu][variant_graphs][guard]") {
  cuda_pool_resource pool;
  stream_guard s;
  device_state state;
  // 16 microbatches of the rank: chunk 0's map sends a later microbatch to the copy of an earlier one, so a
  // runtime that forwards both before the earlier one's backward (not the model's order) wraps that copy.
  const variant_model model{{"cp1", "cp2", "cp4"}, {1}, {plan::schedule::interleaved(4, 0, 16, 2, 4)}};
  REQUIRE(setenv("GRAPHPOOL_SLOT_DEBUG", "1", 1) == 0);
  variant_graphs graphs(pool, model);
  REQUIRE(unsetenv("GRAPHPOOL_SLOT_DEBUG") == 0);
  REQUIRE(graphs.guard().enabled());
  graphs.capture(s.stream, forward_body(state), backward_body(state));
  const std::vector<int>& copies = plan::find_slot_map(graphs.plan(), 16).slots[0];
  int wrapping = 1;
  while (wrapping < 16 && std::find(copies.begin(), copies.begin() + wrapping, copies[static_cast<std::size_t>(wrapping)]) ==
                              copies.begin() + wrapping) {
    ++wrapping;
  }
  REQUIRE(wrapping < 16);
  const auto earlier = static_cast<int>(
      std::find(copies.begin(), copies.end(), copies[static_cast<std::size_t>(wrapping)]) - copies.begin());
  graphs.begin_step(16);
  for (int m = 0; m < wrapping; ++m) {
    set_word(state.forward_token(), m, s.stream);
    graphs.forward(chunk_id{0}, m, branch_id{2}, s.stream);
  }
  set_word(state.forward_token(), wrapping, s.stream);
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, wrapping, branch_id{0}, s.stream),
                    contains_text("the forward of chunk 0 microbatch " + std::to_string(wrapping) +
                                  " layer 0 (branch cp1) would overwrite"));
  CHECK_THROWS_WITH(graphs.backward(chunk_id{1}, 0, branch_id{2}, s.stream),
                    contains_text("the backward of chunk 1 microbatch 0 layer 0 (branch cp4) has no live forward"));
  CHECK(graphs.report().launches == static_cast<std::size_t>(wrapping));
  // Nothing was enqueued: the earlier microbatch's saved bytes are intact for its backward.
  set_word(state.backward_token(), earlier, s.stream);
  graphs.backward(chunk_id{0}, earlier, branch_id{2}, s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(state.read() == 0);
}

TEST_CASE("variant_graphs on a GPU: a plan from JSON gives the in-process plan's addresses", "[gpu][variant_graphs][plan]") {
  cuda_pool_resource pool;
  stream_guard s;
  device_state state;
  std::vector<std::uintptr_t> first_addresses;
  std::string json;
  {
    variant_graphs first(pool, pipeline_model());
    first.capture(s.stream, forward_body(state), backward_body(state));
    json = plan::to_json(first.plan());
    for (std::uint32_t slot = 0; slot < 2 * first.plan().frames.size(); ++slot) {
      for (std::uint32_t b = 0; b < 3; ++b) {
        first_addresses.push_back(reinterpret_cast<std::uintptr_t>(first.arenas().view(slot_id{slot}, branch_id{b}).base()));
      }
    }
  }
  variant_graphs second(pool, pipeline_model());
  second.use_plan(plan::from_json(json));  // before capture(): the given plan is used instead of planning
  second.capture(s.stream, forward_body(state), backward_body(state));
  std::size_t i = 0;
  const std::uintptr_t shift = reinterpret_cast<std::uintptr_t>(second.arenas().view(slot_id{0}, branch_id{0}).base()) -
                               first_addresses[0];
  for (std::uint32_t slot = 0; slot < 2 * second.plan().frames.size(); ++slot) {
    for (std::uint32_t b = 0; b < 3; ++b) {
      CHECK(reinterpret_cast<std::uintptr_t>(second.arenas().view(slot_id{slot}, branch_id{b}).base()) - shift ==
            first_addresses[i++]);
    }
  }
  CHECK(shift == 0);  // the pool hands the freed reservation back: the very same addresses
  replay(second, state, s.stream, 9);
  CHECK(state.read() == 0);
}

TEST_CASE("variant_graphs on a GPU: four branches of 512/256/128/64 MiB and a 2 MiB output take the plan's memory, "
          "rounded once", "[gpu][variant_graphs][memory]") {
  stream_guard s;
  const std::vector<std::size_t> sizes{512 * MiB, 256 * MiB, 128 * MiB, 64 * MiB};
  auto forward = [&](frame_capture& f) {
    static_cast<void>(f.allocate_output(2 * MiB));
    static_cast<void>(f.allocate_saved(sizes[f.branch().index]));
  };
  auto backward = [](frame_capture&) {};
  auto measure = [&](auto& upstream, std::size_t slack, const char* what) {
    INFO(what);
    variant_graphs graphs(upstream, {"cp1", "cp2", "cp4", "cp8"});
    graphs.measure(s.stream, forward, backward);
    const std::size_t planned = graphs.make_plan().saved.footprint_bytes;
    CHECK(planned == 514 * MiB);
    const std::size_t used = device_bytes_taken_by([&] { graphs.reserve(); });
    std::printf("variant_graphs 512/256/128/64 MiB + 2 MiB, %s: device memory %.1f MiB, upstream counter %.1f MiB, plan "
                "%.1f MiB\n", what, static_cast<double>(used) / MiB,
                static_cast<double>(graphs.statistics().upstream_bytes) / MiB, static_cast<double>(planned) / MiB);
    CHECK(used >= planned);
    CHECK(used <= planned + slack);
    CHECK(graphs.statistics().upstream_bytes >= planned);
    CHECK(graphs.statistics().upstream_bytes <= planned + slack);
  };
  cuda_pool_resource pool;
  measure(pool, 32 * MiB, "pool upstream: plan + the pool's one 32 MiB rounding");
  shared_physical_resource pages;
  measure(pages, static_cast<std::size_t>(0.02 * 514 * MiB), "shared pages: within 2% of the plan");
}
