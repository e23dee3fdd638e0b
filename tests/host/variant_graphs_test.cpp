// The one path, measure -> plan -> reserve -> capture -> launch, on host memory with a stand-in
// capture whose "kernels" are host functions: every backward checks what its forward saved.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/capture/variant_graphs.hpp"
#include "graphpool/memory/host_resource.hpp"
#include "graphpool/plan/load.hpp"
#include "graphpool/plan/report.hpp"
#include "stand_in_capture.hpp"

using namespace graphpool;
using graphpool::testing::contains_text;
using graphpool::testing::knobs;
using graphpool::testing::stand_in_session;
using graphs_type = variant_graphs<host_resource, stand_in_session>;
using frame = graphs_type::frame;

namespace {

const cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x10);

// What the host "kernels" read and write.
struct world {
  std::int64_t forward_input = -1;   // the microbatch a forward runs
  std::int64_t backward_expect = -1;  // the microbatch a backward runs
  long checked = 0;
  long mismatches = 0;
};

std::size_t saved_elements(chunk_id c, layer_id l, branch_id b) { return 512 * (b.index + 1) + 64 * l.index + 32 * c.index; }

std::int64_t token(const frame& f, std::int64_t microbatch) {
  return ((microbatch * 16 + f.chunk().index) * 16 + f.layer().index) * 16 + f.branch().index;
}

// Forward: an output, a saved tensor filled with a token of (microbatch, chunk, layer, branch).
graphs_type::body forward_body(world& w, std::size_t extra_bytes = 0) {
  return [&w, extra_bytes](frame& f) {
    auto* out = static_cast<std::int64_t*>(f.allocate_output(256));
    const std::size_t n = saved_elements(f.chunk(), f.layer(), f.branch());
    auto* saved = static_cast<std::int64_t*>(f.allocate_saved(n * sizeof(std::int64_t) + extra_bytes));
    CHECK(f.allocate_saved(0) == nullptr);  // zero bytes: nullptr, nothing placed
    void* work = f.allocate_transient(1024);
    f.free_transient(work);
    const frame& self = f;
    auto make = [&self](std::int64_t m) { return token(self, m); };
    const std::int64_t base = make(0);
    const std::int64_t step = make(1) - base;
    f.session().record([&w, out, saved, n, base, step] {
      const std::int64_t t = base + step * w.forward_input;
      for (std::size_t i = 0; i < n; ++i) saved[i] = t + static_cast<std::int64_t>(i);
      out[0] = t;
    });
  };
}

// Backward: checks every element its forward saved, returns a gradient.
graphs_type::body backward_body(world& w) {
  return [&w](frame& f) {
    const auto* saved = static_cast<const std::int64_t*>(f.saved(0));
    auto* grad = static_cast<std::int64_t*>(f.allocate_gradient(64 * (f.branch().index + 1)));
    const std::size_t n = saved_elements(f.chunk(), f.layer(), f.branch());
    const std::int64_t base = token(f, 0);
    const std::int64_t step = token(f, 1) - base;
    f.session().record([&w, saved, grad, n, base, step] {
      const std::int64_t t = base + step * w.backward_expect;
      for (std::size_t i = 0; i < n; ++i) {
        ++w.checked;
        if (saved[i] != t + static_cast<std::int64_t>(i)) ++w.mismatches;
      }
      grad[0] = t;
    });
  };
}

// A forward that saves `bytes` and does nothing else.
graphs_type::body saving(std::size_t bytes) {
  return [bytes](frame& f) { static_cast<void>(f.allocate_saved(bytes)); };
}

variant_model pipeline_model(std::vector<plan::schedule> schedules = {plan::schedule::interleaved(4, 0, 8, 2, 4)}) {
  return variant_model{{"cp1", "cp2", "cp4"}, {2}, std::move(schedules)};
}

// Replays `s` with a random branch per microbatch (fixed seed) through `graphs`.
void replay(graphs_type& graphs, world& w, const plan::schedule& s, unsigned seed = 7) {
  std::mt19937 random(seed);
  std::vector<branch_id> branch_of(static_cast<std::size_t>(s.microbatches()));
  for (branch_id& b : branch_of) b = branch_id{static_cast<std::uint32_t>(random() % graphs.model().branches.size())};
  graphs.begin_step(s.microbatches());
  for (const plan::event& e : s.events()) {
    const chunk_id chunk{static_cast<std::uint32_t>(e.chunk)};
    const branch_id branch = branch_of[static_cast<std::size_t>(e.microbatch)];
    if (e.kind == plan::phase::forward) {
      w.forward_input = e.microbatch;
      graphs.forward(chunk, e.microbatch, branch, stream);
    } else {
      w.backward_expect = e.microbatch;
      graphs.backward(chunk, e.microbatch, branch, stream);
    }
  }
}

}  // namespace

TEST_CASE("variant_graphs: a pipeline rank from measure to launch, every backward reads what its forward saved",
          "[variant_graphs]") {
  for (plan::assignment mode : {plan::assignment::offsets, plan::assignment::coloring}) {
    INFO(plan::to_string(mode));
    host_resource host;
    world w;
    variant_options options;
    options.mode = mode;
    options.guard = true;
    graphs_type graphs(host, pipeline_model(), options);
    graphs.capture(stream, forward_body(w), backward_body(w));
    const plan::plan& p = graphs.plan();
    CHECK(graphs.graphs() == p.frames.size() * 3 * 2);
    for (unsigned seed : {1u, 2u, 3u}) replay(graphs, w, plan::schedule::interleaved(4, 0, 8, 2, 4), seed);
    CHECK(w.checked > 0);
    CHECK(w.mismatches == 0);
    CHECK(graphs.guard().live() == 0);
    const arena_allocator_statistics stats = graphs.statistics();
    // The arenas reach the furthest measured branch; the plan rounds each frame up to 256 bytes.
    CHECK(stats.reserved_bytes <= p.saved.footprint_bytes + p.grad.footprint_bytes + 256 * stats.arenas.size());
    CHECK(stats.reserved_bytes + 256 * p.frames.size() >= p.saved.footprint_bytes);
    CHECK(stats.reserved_bytes < stats.per_branch_pool_bytes);
  }
}

namespace {

// 16 microbatches of the model's rank, and the same 16 with every forward of both chunks first, then every
// backward: an order that holds more microbatches at once than the plan has copies for (use_plan refuses
// a plan that wraps on the model's own schedules, so a runtime wraps a copy only by replaying another order).
const plan::schedule sixteen = plan::schedule::interleaved(4, 0, 16, 2, 4);
plan::schedule forwards_first() {
  std::vector<int> order;
  for (int id : {1, 2, -2, -1}) order.insert(order.end(), 16, id);
  return plan::schedule::from_order(order, 2, "every forward first");
}

// The first microbatch of chunk 0 that replays the copy of an earlier one in `p`'s map of `microbatches`
// (-1: none does).
int first_on_a_used_copy(const plan::plan& p, int microbatches) {
  const std::vector<int>& copies = plan::find_slot_map(p, microbatches).slots[0];
  for (int m = 1; m < microbatches; ++m) {
    if (std::find(copies.begin(), copies.begin() + m, copies[static_cast<std::size_t>(m)]) != copies.begin() + m) return m;
  }
  return -1;
}

}  // namespace

TEST_CASE("variant_graphs: replaying an order other than the model's wraps a copy: data is corrupted without the "
          "guard, and the guard from the environment refuses it before enqueue", "[variant_graphs][guard]") {
  host_resource host;
  world w;
  variant_options no_guard;
  no_guard.guard = false;
  {
    graphs_type graphs(host, pipeline_model({sixteen}), no_guard);
    graphs.capture(stream, forward_body(w), backward_body(w));
    REQUIRE(first_on_a_used_copy(graphs.plan(), 16) > 0);
    replay(graphs, w, forwards_first());
    CHECK(w.mismatches > 0);  // the data check sees the overwrite
  }
  REQUIRE(setenv("GRAPHPOOL_SLOT_DEBUG", "1", 1) == 0);
  graphs_type graphs(host, pipeline_model({sixteen}));  // options default: the guard follows the environment
  REQUIRE(unsetenv("GRAPHPOOL_SLOT_DEBUG") == 0);
  CHECK(graphs.guard().enabled());
  graphs.capture(stream, forward_body(w), backward_body(w));
  const int wrapping = first_on_a_used_copy(graphs.plan(), 16);
  REQUIRE(wrapping > 0);
  const int launches = knobs().launches;
  graphs.begin_step(16);
  for (int m = 0; m < wrapping; ++m) graphs.forward(chunk_id{0}, m, layer_id{0}, branch_id{0}, stream);
  CHECK(knobs().launches == launches + wrapping);
  const std::string m = std::to_string(wrapping);
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, wrapping, layer_id{0}, branch_id{1}, stream),
                    contains_text("slot guard: the forward of chunk 0 microbatch " + m +
                                  " layer 0 (branch cp2) would overwrite arena 0 bytes ["));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, wrapping, layer_id{0}, branch_id{1}, stream),
                    contains_text("still held by chunk 0 microbatch "));
  CHECK(knobs().launches == launches + wrapping);  // refused before anything was enqueued
}

TEST_CASE("variant_graphs: the guard refuses a backward without its forward, tells layers apart, and undoes the "
          "claim of a failed launch", "[variant_graphs][guard]") {
  host_resource host;
  world w;
  variant_options options;
  options.guard = true;
  graphs_type graphs(host, pipeline_model(), options);
  graphs.capture(stream, forward_body(w), backward_body(w));
  graphs.begin_step(8);
  const int launches = knobs().launches;
  CHECK_THROWS_WITH(graphs.backward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream),
                    contains_text("slot guard: the backward of chunk 0 microbatch 0 layer 0 (branch cp1) has no live "
                                  "forward"));
  w.forward_input = 0;
  graphs.forward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream);
  // Layer 1 of the same microbatch is another frame: its backward has no forward yet.
  CHECK_THROWS_WITH(graphs.backward(chunk_id{0}, 0, layer_id{1}, branch_id{0}, stream),
                    contains_text("the backward of chunk 0 microbatch 0 layer 1 (branch cp1) has no live forward"));
  // Another branch's backward of the same frame is refused too.
  CHECK_THROWS_WITH(graphs.backward(chunk_id{0}, 0, layer_id{0}, branch_id{2}, stream),
                    contains_text("the backward of chunk 0 microbatch 0 layer 0 (branch cp4) has no live forward"));
  CHECK(knobs().launches == launches + 1);
  knobs().fail_next_launch = true;
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 1, layer_id{0}, branch_id{0}, stream),
                    contains_text("stand-in launch failed"));
  CHECK(graphs.guard().live() == 1);  // the failed forward's claim was undone
  w.backward_expect = 0;
  graphs.backward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream);
  CHECK(graphs.guard().live() == 0);
  CHECK_THROWS_WITH(graphs.backward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream),
                    contains_text("has no live forward: it never ran, or its backward already did"));
  CHECK(w.mismatches == 0);
}

TEST_CASE("variant_graphs: launches name what is unknown before anything is enqueued", "[variant_graphs]") {
  host_resource host;
  world w;
  graphs_type graphs(host, variant_model{{"cp1", "cp2", "cp4"}, {2},
                                         {plan::schedule::interleaved(4, 0, 8, 2, 4), plan::schedule::interleaved(4, 0, 4, 2, 4)}});
  // Before any plan there is no frame to launch, read or step through.
  const std::string no_plan = "no plan yet, so no frame to launch, read or step through; call capture() (or make_plan()";
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream), contains_text(no_plan));
  CHECK_THROWS_WITH(graphs.slot(chunk_id{0}, 0), contains_text(no_plan));
  CHECK_THROWS_WITH(graphs.output(chunk_id{0}, 0, layer_id{0}, branch_id{0}, 0), contains_text(no_plan));
  CHECK_THROWS_WITH(graphs.begin_step(8), contains_text(no_plan));
  graphs.measure(stream, forward_body(w), backward_body(w));
  graphs.make_plan();
  graphs.begin_step(8);  // planned, not yet captured: the frame is known, the graph is not
  CHECK_THROWS_WITH(graphs.backward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream),
                    contains_text("variant_graphs::backward: not ready; call capture() first"));
  graphs.capture(stream, forward_body(w), backward_body(w));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream),
                    contains_text("the plan has slot maps for 8, 4 microbatches; call begin_step(microbatches)"));
  CHECK_THROWS_WITH(graphs.begin_step(6), contains_text("no slot map for a schedule of 6 microbatch(es): the plan was made "
                                                        "for 8, 4; plan with every schedule you replay"));
  graphs.begin_step(4);
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 4, layer_id{0}, branch_id{0}, stream),
                    contains_text("microbatch 4 is outside schedule 'interleaved pp=4 rank=0 microbatches=4 vpp=2 "
                                  "group=4', which runs 4 microbatch(es)"));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{2}, 0, layer_id{0}, branch_id{0}, stream),
                    contains_text("chunk 2 is unknown; the model has 2 chunk(s)"));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{1}, 0, layer_id{2}, branch_id{0}, stream),
                    contains_text("layer 2 is unknown; chunk 1 has 2 layer(s)"));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{1}, 0, layer_id{0}, branch_id{3}, stream),
                    contains_text("branch 3 is unknown; the model has 3 branch(es)"));
  CHECK_THROWS_WITH(graphs.branch("cp8"), contains_text("no branch named 'cp8'; the branches are 'cp1', 'cp2', 'cp4'"));
  CHECK(static_cast<int>(graphs.slot(chunk_id{1}, 3).index) == graphs.plan().slot_maps[1].slots[1][3]);
  // Where a runtime reads a frame's output and returned gradient: the frame the slot map picks.
  const std::uint32_t copy = graphs.slot(chunk_id{1}, 3).index;
  const std::vector<plan::planned_frame>& frames = graphs.plan().frames;
  const auto picked = std::find_if(frames.begin(), frames.end(), [&](const plan::planned_frame& f) {
    return f.chunk == 1 && f.slot == static_cast<int>(copy) && f.layer == 1;
  });
  REQUIRE(picked != frames.end());
  const auto frame = static_cast<std::uint32_t>(picked - frames.begin());
  CHECK(graphs.output(chunk_id{1}, 3, layer_id{1}, branch_id{2}, 0) ==
        graphs.arenas().view(slot_id{2 * frame}, branch_id{2}).output(0));
  CHECK(graphs.gradient(chunk_id{1}, 3, layer_id{1}, branch_id{2}, 0) ==
        graphs.arenas().view(slot_id{2 * frame + 1}, branch_id{2}).saved(0));
  CHECK_THROWS_WITH(graphs.output(chunk_id{1}, 4, layer_id{0}, branch_id{0}, 0), contains_text("microbatch 4 is outside"));
}

TEST_CASE("variant_graphs: a plan from JSON gives the same layout, and one too small for a branch is refused naming both",
          "[variant_graphs][plan]") {
  host_resource host;
  world w;
  graphs_type first(host, pipeline_model());
  first.capture(stream, forward_body(w), backward_body(w));
  const std::string json = plan::to_json(first.plan());
  graphs_type second(host, pipeline_model());
  second.measure(stream, forward_body(w), backward_body(w));
  second.use_plan(plan::from_json(json));
  second.reserve();
  second.capture(stream);
  const auto offset = [](const graphs_type& g, std::uint32_t slot, std::uint32_t branch) {
    const auto* base = static_cast<const std::byte*>(g.arenas().view(slot_id{0}, branch_id{0}).base());
    return static_cast<const std::byte*>(g.arenas().view(slot_id{slot}, branch_id{branch}).base()) - base;
  };
  for (std::uint32_t s = 0; s < 2 * first.plan().frames.size(); ++s) {
    for (std::uint32_t b = 0; b < 3; ++b) CHECK(offset(first, s, b) == offset(second, s, b));
  }
  replay(second, w, plan::schedule::interleaved(4, 0, 8, 2, 4));
  CHECK(w.mismatches == 0);

  // A plan made for smaller frames: the branch that no longer fits is named with both sizes.
  graphs_type grown(host, pipeline_model());
  grown.measure(stream, forward_body(w, 4096), backward_body(w));
  CHECK_THROWS_WITH(grown.use_plan(plan::from_json(json)),
                    contains_text("plan frame (chunk 0 slot 0 layer 0) holds "));
  CHECK_THROWS_WITH(grown.use_plan(plan::from_json(json)),
                    contains_text(" bytes but branch 'cp4' requests "));
  CHECK_THROWS_WITH(plan::from_json("{\"mode\": \"stacked\"}"), contains_text("mode \"stacked\" is neither"));
  CHECK_THROWS_WITH(plan::from_json("{\"mode\": \"offsets\", \"chunks\": 1"), contains_text("JSON: expected '}' at byte"));
}

TEST_CASE("variant_graphs: a capture whose requests differ from the measurement, or whose body throws, is rolled back",
          "[variant_graphs]") {
  host_resource host;
  world w;
  graphs_type graphs(host, {"a", "b"});
  int calls = 0;
  graphs.measure(stream, [&](frame& f) { static_cast<void>(f.allocate_saved(1024 + 256 * calls++)); },
                 [&](frame& f) { static_cast<void>(f.saved(0)); });
  graphs.make_plan();
  graphs.reserve();
  CHECK_THROWS_WITH(graphs.capture(stream), contains_text("persistent request 0 (saved 1536 B @256) differs from the "
                                                          "measurement (saved 1024 B @256)"));
  CHECK(graphs.graphs() == 0);
  graphs_type throwing(host, {"a"});
  CHECK_THROWS_WITH(throwing.capture(stream, [](frame&) { throw std::runtime_error("kernel setup failed"); },
                                     [](frame&) {}),
                    contains_text("failed: kernel setup failed; the capture was rolled back"));
  CHECK_THROWS_WITH(throwing.reserve(), contains_text("variant_graphs::reserve: not ready; call make_plan() or use_plan() first"));
  throwing.capture(stream, [](frame& f) { static_cast<void>(f.allocate_output(512)); }, [](frame&) {});
  CHECK(throwing.graphs() == 2);
  graphs_type wrong_phase(host, {"a"});
  CHECK_THROWS_WITH(wrong_phase.capture(stream, [](frame& f) { static_cast<void>(f.allocate_gradient(8)); }, [](frame&) {}),
                    contains_text("a gradient request belongs in the backward"));
  CHECK_THROWS_WITH(graphs_type(host, {"a", "a"}), contains_text("two branches are named 'a'"));
  CHECK_THROWS_WITH(graphs_type(host, std::vector<std::string>{}), contains_text("no branch given"));
}

TEST_CASE("variant_graphs: one layer, four variants, one microbatch at a time share the largest branch's memory",
          "[variant_graphs]") {
  host_resource host;
  world w;
  graphs_type graphs(host, {"cp1", "cp2", "cp4", "cp8"});
  graphs.capture(stream, [](frame& f) {
    static_cast<void>(f.allocate_output(1 << 10));
    static_cast<void>(f.allocate_saved((std::size_t{1} << 20) >> f.branch().index));
  }, [](frame& f) { CHECK(f.saved(0) != nullptr); });
  const arena_allocator_statistics stats = graphs.statistics();
  CHECK(stats.reserved_bytes == (1 << 10) + (1 << 20));
  CHECK(stats.per_branch_pool_bytes == 4 * (1 << 10) + (1 << 20) + (1 << 19) + (1 << 18) + (1 << 17));
  for (int m = 0; m < 3; ++m) {
    graphs.forward(m, graphs.branch("cp4"), stream);
    graphs.backward(m, graphs.branch("cp4"), stream);
  }
  CHECK(graphs.summary().find("reserved") != std::string::npos);
  // Capturing again with the same requests reuses the reservation; changed requests are refused.
  graphs.capture(stream, [](frame& f) {
    static_cast<void>(f.allocate_output(1 << 10));
    static_cast<void>(f.allocate_saved((std::size_t{1} << 20) >> f.branch().index));
  }, [](frame&) {});
  CHECK(graphs.graphs() == 8);
  CHECK_THROWS_WITH(graphs.capture(stream, saving(std::size_t{2} << 20), [](frame&) {}),
                    contains_text("the bodies' persistent requests changed since reserve()"));
  CHECK(graphs.statistics().reserved_bytes == (1 << 10) + (1 << 20));
}

namespace {

// Backward that also checks every later layer's returned gradient: each keeps its own bytes until the
// microbatch's backward is over (layer l reads what layers l+1.. returned).
graphs_type::body backward_reading_gradients(world& w, std::uint32_t layers) {
  return [&w, layers, inner = backward_body(w)](frame& f) {
    inner(f);
    for (std::uint32_t k = f.layer().index + 1; k < layers; ++k) {
      const auto* grad = static_cast<const std::int64_t*>(f.gradient(layer_id{k}, 0));
      const std::int64_t base = ((std::int64_t{f.chunk().index}) * 16 + k) * 16 + f.branch().index;
      f.session().record([&w, grad, base] {
        ++w.checked;
        if (grad[0] != base + 16 * 16 * 16 * w.backward_expect) ++w.mismatches;
      });
    }
  };
}

}  // namespace

TEST_CASE("variant_graphs: reserve() puts every frame and every layer's gradient at the plan's offsets, and no "
          "layer's gradient overwrites another's", "[variant_graphs]") {
  host_resource host;
  world w;
  const variant_model model{{"cp1", "cp2", "cp4"}, {3}, {plan::schedule::interleaved(4, 0, 8, 2, 4)}};
  variant_options options;
  options.guard = true;
  graphs_type graphs(host, model, options);
  graphs.capture(stream, forward_body(w), backward_reading_gradients(w, 3));
  const plan::plan& p = graphs.plan();
  REQUIRE(p.mode == plan::assignment::offsets);
  const auto address = [&](std::size_t slot, std::uint32_t b) {
    return static_cast<const std::byte*>(graphs.arenas().view(slot_id{static_cast<std::uint32_t>(slot)}, branch_id{b}).base());
  };
  const auto grad_of = [&](const plan::planned_frame& f) {
    for (const plan::planned_grad& g : p.grads) {
      if (g.chunk == f.chunk && g.slot == f.slot) return g;
    }
    FAIL("no gradient for " << f.chunk << "/" << f.slot);
    return plan::planned_grad{};
  };
  // Slot 2i holds frame i's outputs and saved tensors, slot 2i + 1 the gradients its backward returns:
  // the largest branch's 192 bytes, 256-aligned, one layer after another.
  const std::size_t grad0 = grad_of(p.frames[0]).offset;
  for (std::size_t i = 0; i < p.frames.size(); ++i) {
    const plan::planned_frame& f = p.frames[i];
    for (std::uint32_t b = 0; b < 3; ++b) {
      INFO("frame " << i << " branch " << b);
      CHECK(address(2 * i, b) - address(0, b) == static_cast<std::ptrdiff_t>(f.offset - p.frames[0].offset));
      CHECK(address(2 * i + 1, b) - address(1, b) ==
            static_cast<std::ptrdiff_t>(grad_of(f).offset + 256 * static_cast<std::size_t>(f.layer) - grad0));
    }
  }
  replay(graphs, w, plan::schedule::interleaved(4, 0, 8, 2, 4));
  CHECK(w.checked > 0);
  CHECK(w.mismatches == 0);
}

TEST_CASE("variant_graphs: each chunk launches through its own slot map", "[variant_graphs]") {
  host_resource host;
  world w;
  variant_options options;
  options.guard = true;
  const plan::schedule order = plan::schedule::interleaved(4, 0, 8, 2, 4);
  graphs_type planner(host, pipeline_model(), options);
  planner.measure(stream, forward_body(w), backward_body(w));
  const plan::plan planned = planner.make_plan();
  // Chunk 1's copies renamed (s -> S-1-s), frames, gradients and map together: a plan as valid as the
  // planner's, whose map differs between the chunks.
  plan::plan p = planned;
  const int slots = p.slots;
  REQUIRE(slots > 1);
  for (plan::planned_frame& f : p.frames) {
    if (f.chunk != 1) continue;
    for (const plan::planned_frame& old : planned.frames) {
      if (old.chunk == 1 && old.slot == slots - 1 - f.slot && old.layer == f.layer) {
        f.arena = old.arena;
        f.offset = old.offset;
        f.bytes = old.bytes;
        f.color = old.color;
      }
    }
  }
  for (plan::planned_grad& g : p.grads) {
    if (g.chunk != 1) continue;
    for (const plan::planned_grad& old : planned.grads) {
      if (old.chunk == 1 && old.slot == slots - 1 - g.slot) {
        g.arena = old.arena;
        g.offset = old.offset;
        g.bytes = old.bytes;
        g.color = old.color;
      }
    }
  }
  for (int& copy : p.slot_maps.at(0).slots.at(1)) copy = slots - 1 - copy;
  graphs_type graphs(host, pipeline_model(), options);
  graphs.measure(stream, forward_body(w), backward_body(w));
  graphs.use_plan(p);
  graphs.reserve();
  graphs.capture(stream);
  graphs.begin_step(8);
  bool differ = false;
  for (int m = 0; m < 8; ++m) {
    CHECK(static_cast<int>(graphs.slot(chunk_id{0}, m).index) == p.slot_maps[0].slots[0][static_cast<std::size_t>(m)]);
    CHECK(static_cast<int>(graphs.slot(chunk_id{1}, m).index) == p.slot_maps[0].slots[1][static_cast<std::size_t>(m)]);
    differ = differ || graphs.slot(chunk_id{0}, m).index != graphs.slot(chunk_id{1}, m).index;
  }
  CHECK(differ);
  for (unsigned seed : {1u, 2u}) replay(graphs, w, order, seed);
  CHECK(w.checked > 0);
  CHECK(w.mismatches == 0);
  CHECK(graphs.guard().live() == 0);
}

TEST_CASE("variant_graphs: a capture making fewer or more persistent requests than its measurement is refused",
          "[variant_graphs]") {
  host_resource host;
  graphs_type graphs(host, {"a"});
  int extra_saved = 0;
  int extra_gradients = 0;
  graphs.measure(stream,
                 [&](frame& f) {
                   for (int i = 0; i < 2 + extra_saved; ++i) static_cast<void>(f.allocate_saved(512));
                 },
                 [&](frame& f) {
                   for (int i = 0; i < 1 + extra_gradients; ++i) static_cast<void>(f.allocate_gradient(64));
                 });
  graphs.make_plan();
  graphs.reserve();
  extra_saved = -1;
  CHECK_THROWS_WITH(graphs.capture(stream), contains_text("chunk 0 slot 0 branch 'a' layer 0 forward made 1 persistent "
                                                          "request(s), its measurement 2; the captured code must make "
                                                          "the same requests"));
  extra_saved = 1;
  CHECK_THROWS_WITH(graphs.capture(stream), contains_text("layer 0 forward: persistent request 2 (saved 512 B @256) "
                                                          "differs from the measurement, which made only 2 request(s)"));
  extra_saved = 0;
  extra_gradients = -1;
  CHECK_THROWS_WITH(graphs.capture(stream), contains_text("layer 0 backward made 0 persistent request(s), its "
                                                          "measurement 1"));
  extra_gradients = 0;
  graphs.capture(stream);
  CHECK(graphs.graphs() == 2);
}

TEST_CASE("variant_graphs: zero-byte requests return nullptr when measuring and capturing, and take no part",
          "[variant_graphs]") {
  host_resource host;
  graphs_type graphs(host, {"a", "b"});
  int nulls = 0;
  graphs.capture(stream,
                 [&](frame& f) {
                   nulls += f.allocate_output(0) == nullptr;
                   static_cast<void>(f.allocate_saved(512));
                   nulls += f.allocate_saved(0) == nullptr;
                 },
                 [&](frame& f) { nulls += f.allocate_gradient(0) == nullptr; });
  CHECK(nulls == 3 * 2 * 2);  // three requests, two branches, measured then captured
  for (std::uint32_t b = 0; b < 2; ++b) {
    CHECK(graphs.arenas().view(slot_id{0}, branch_id{b}).output_count() == 0);
    CHECK(graphs.arenas().view(slot_id{0}, branch_id{b}).saved_count() == 1);
    CHECK(graphs.arenas().view(slot_id{1}, branch_id{b}).saved_count() == 0);
  }
}

TEST_CASE("variant_graphs: use_plan refuses a plan that does not fit the model, naming what differs",
          "[variant_graphs][plan]") {
  host_resource host;
  world w;
  graphs_type graphs(host, pipeline_model());
  graphs.measure(stream, forward_body(w), backward_body(w));
  const plan::plan good = graphs.make_plan();
  const auto refused = [&](const char* what, auto change, const std::string& message) {
    INFO(what);
    plan::plan p = good;
    change(p);
    CHECK_THROWS_WITH(graphs.use_plan(p), contains_text(message));
  };
  const std::string fix = "; make the plan from this model's measurement";
  refused("layers", [](plan::plan& p) { p.layers_per_chunk = {2, 3}; },
          "the plan's layers per chunk differ from the model's (2 vs 2 chunk(s))" + fix);
  refused("branch names", [](plan::plan& p) { p.branches[2] = "cp8"; },
          "the plan's branches differ from the model's (3 vs 3, same names in the same order needed)" + fix);
  refused("no map", [](plan::plan& p) { p.slot_maps.clear(); }, "the plan has no slot map" + fix);
  // The parts must fit together (plan::check_structure) and serve the model's schedules (plan::check_replay).
  refused("order", [](plan::plan& p) { std::swap(p.frames[0], p.frames[1]); },
          "plan: frame 0 is (chunk 0 slot 0 layer 1), not (chunk 0 slot 0 layer 0): frames go chunk-major, then slot, "
          "then layer");
  refused("frame past its arena", [](plan::plan& p) { p.frames[0].bytes = p.arena_bytes[0] - p.frames[0].offset + 1; },
          "plan: frame (chunk 0 slot 0 layer 0): ");
  refused("no gradient", [](plan::plan& p) { p.grads.erase(p.grads.begin()); },
          "plan: 15 returned gradient(s), where the chunks with layers need 16 (one per slot)");
  refused("small gradient", [](plan::plan& p) { p.grads[0].bytes = 256; },
          "plan gradient of chunk 0 slot 0 holds 256 bytes but the layers' backwards return 512 bytes; plan with the "
          "measured sizes");
  refused("gradient past its arena", [](plan::plan& p) { p.grads[0].offset = p.grad_arena_bytes[0]; },
          "plan: the gradient of chunk 0 slot 0: 512 bytes at offset");
  refused("map chunks", [](plan::plan& p) { p.slot_maps[0].slots.pop_back(); },
          "plan: the slot map for 'interleaved pp=4 rank=0 microbatches=8 vpp=2 group=4' has 1 row(s) for 8 "
          "microbatch(es); it needs one row per chunk (2)");
  refused("slot beyond", [](plan::plan& p) { p.slot_maps[0].slots[1][3] = p.slots; },
          "names slot " + std::to_string(good.slots) + " of chunk 1; the plan has " + std::to_string(good.slots));
  refused("slot below", [](plan::plan& p) { p.slot_maps[0].slots[0][0] = -1; }, "names slot -1 of chunk 0; the plan has");
  refused("wrapping map", [](plan::plan& p) { p.slot_maps[0].slots[0].assign(8, 0); },
          "schedule 'interleaved pp=4 rank=0 microbatches=8 vpp=2 group=4', entry 1 (order id 1): the forward of chunk 0 "
          "microbatch 1 lands on frame (chunk 0, slot 0) still alive for microbatch 0: the slot map is invalid for this "
          "schedule");
  refused("frames on one another", [](plan::plan& p) { p.frames[2].offset = p.frames[0].offset; },
          "plan: frames (chunk 0 slot 0 layer 0) and (chunk 0 slot 1 layer 0) share bytes of arena 0 but are alive "
          "together in schedule 'interleaved pp=4 rank=0 microbatches=8 vpp=2 group=4'");
  CHECK_NOTHROW(graphs.use_plan(good));
}

TEST_CASE("variant_graphs: bad models, missing bodies and reads of parts not placed are errors naming them",
          "[variant_graphs]") {
  host_resource host;
  CHECK_THROWS_WITH(graphs_type(host, {"a", ""}), contains_text("variant_graphs: branch 1 has an empty name"));
  CHECK_THROWS_WITH(graphs_type(host, variant_model{{"a"}, {}, {}}),
                    contains_text("variant_graphs: no layer count given; give one per chunk"));
  CHECK_THROWS_WITH(graphs_type(host, variant_model{{"a"}, {-1}, {}}),
                    contains_text("variant_graphs: a chunk has -1 layers; counts cannot be negative"));
  CHECK_THROWS_WITH(graphs_type(host, variant_model{{"a"}, {1, 1, 1}, {plan::schedule::interleaved(4, 0, 8, 2, 4)}}),
                    contains_text("variant_graphs: 3 layer counts for schedules of 2 chunk(s); give one per chunk, or "
                                  "one for all"));
  graphs_type graphs(host, {"a"});
  CHECK_THROWS_WITH(graphs.measure(stream, {}, [](frame&) {}),
                    contains_text("variant_graphs: no forward body; pass one to measure()"));
  CHECK_THROWS_WITH(graphs.measure(stream, [](frame& f) { static_cast<void>(f.output(layer_id{5}, 0)); }, [](frame&) {}),
                    contains_text("capture of slot 'chunk 0 (measuring)' branch 'a': layer 5 is beyond the chunk's 1 "
                                  "layer(s)"));
  CHECK_THROWS_WITH(graphs.measure(stream, [](frame&) {}, [](frame& f) { static_cast<void>(f.gradient(layer_id{0}, 0)); }),
                    contains_text(": gradient part 0 of layer 0 is not placed yet (0 so far); a forward reads outputs "
                                  "of earlier layers, a backward gradients of later ones"));
  CHECK_THROWS_WITH(graphs.capture(stream,
                                   [](frame& f) {
                                     if (!f.measuring()) static_cast<void>(f.output(layer_id{5}, 0));
                                   },
                                   [](frame&) {}),
                    contains_text("chunk 0 slot 0 branch 'a': layer 5 is beyond the chunk's 1 layer(s)"));
  measuring_branch measured;
  CHECK_THROWS_WITH(measured.layout(), contains_text("measuring_branch: no measuring capture has finished yet"));
  CHECK_THROWS_WITH(plan::from_json("{\"mode\": \"offsets\", \"chunks\": -1}"),
                    contains_text("plan JSON chunks: expected a non-negative integer, found -1"));
}

TEST_CASE("variant_graphs: a measure that throws keeps the earlier bodies and measurement; after reserve() the "
          "graphs still capture",
          "[variant_graphs][errors]") {
  host_resource host;
  graphs_type graphs(host, {"a", "b"});
  graphs.capture(stream, saving(4096), [](frame&) {});
  CHECK_THROWS_WITH(graphs.measure(stream, [](frame&) { throw std::runtime_error("bad body"); }, [](frame&) {}),
                    contains_text("failed: bad body; the capture was rolled back"));
  graphs.capture(stream);  // the earlier bodies and measurement
  CHECK(graphs.graphs() == 4);
  CHECK_THROWS_WITH(graphs.measure(stream, saving(8192), [](frame&) {}),
                    contains_text("persistent requests changed since reserve()"));
  graphs.capture(stream);  // still the earlier bodies, which fit the reservation
  graphs.capture(stream, saving(4096), [](frame&) {});
  CHECK(graphs.graphs() == 4);
}

TEST_CASE("variant_graphs: measuring again before reserve() makes reserve() check the plan against the new "
          "requests",
          "[variant_graphs][errors]") {
  host_resource host;
  graphs_type graphs(host, {"a", "b"});
  graphs.measure(stream, saving(4096), [](frame&) {});
  graphs.make_plan();
  graphs.reserve();
  graphs.capture(stream);
  graphs.release();
  graphs.measure(stream, saving(1 << 20), [](frame&) {});  // larger than the plan's frame
  CHECK_THROWS_WITH(graphs.reserve(), contains_text("holds 4096 bytes but branch 'a' requests 1048576 bytes"));
  CHECK_FALSE(graphs.reserved());
  graphs.make_plan();
  graphs.reserve();
  graphs.capture(stream);
  CHECK(graphs.arenas().view(slot_id{0}, branch_id{0}).bytes() >= (1u << 20));
}

TEST_CASE("variant_graphs: capture(stream, forward, backward) keeps a plan given with use_plan() when it throws, "
          "and plans again where none was given",
          "[variant_graphs][errors]") {
  host_resource host;
  graphs_type planner(host, {"a", "b"});
  planner.measure(stream, saving(4096), [](frame&) {});
  const plan::plan given = planner.make_plan();
  graphs_type graphs(host, {"a", "b"});
  graphs.use_plan(given);
  CHECK_THROWS_WITH(graphs.capture(stream, [](frame&) { throw std::runtime_error("bad body"); }, [](frame&) {}),
                    contains_text("bad body"));
  CHECK(graphs.plan().frames.size() == given.frames.size());
  graphs.capture(stream, saving(4096), [](frame&) {});
  CHECK(graphs.graphs() == 4);
  graphs.release();
  // The given plan stays given: a body larger than it is refused, naming the frame.
  CHECK_THROWS_WITH(graphs.capture(stream, saving(1 << 20), [](frame&) {}), contains_text("holds 4096 bytes"));
  // Without use_plan(), each capture(stream, forward, backward) plans from its own measurement.
  graphs_type own(host, {"a", "b"});
  own.capture(stream, saving(4096), [](frame&) {});
  own.release();
  own.capture(stream, saving(1 << 20), [](frame&) {});
  CHECK(own.graphs() == 4);
}

TEST_CASE("variant_graphs: the guard names the frame holding the bytes of a backward whose forward never ran",
          "[variant_graphs][errors]") {
  host_resource host;
  variant_options options;
  options.guard = true;
  graphs_type graphs(host, {"cp1", "cp2"}, options);
  graphs.capture(stream, saving(4096), [](frame&) {});
  graphs.forward(0, graphs.branch("cp1"), stream);
  CHECK_THROWS_WITH(graphs.backward(0, graphs.branch("cp2"), stream),
                    contains_text("are held by chunk 0 microbatch 0 layer 0 (branch cp1)"));
  graphs.backward(0, graphs.branch("cp1"), stream);
  CHECK(graphs.guard().live() == 0);
}

TEST_CASE("variant_graphs: a body that throws something other than a std::exception is rolled back and named too",
          "[variant_graphs][errors]") {
  host_resource host;
  graphs_type graphs(host, {"a"});
  CHECK_THROWS_WITH(graphs.capture(stream, [](frame&) { throw 42; }, [](frame&) {}),
                    contains_text("branch 'a' failed: the body threw something that is not a std::exception; the "
                                  "capture was rolled back"));
  CHECK(graphs.graphs() == 0);
  graphs.capture(stream, saving(512), [](frame&) {});
  CHECK(graphs.graphs() == 2);
}
