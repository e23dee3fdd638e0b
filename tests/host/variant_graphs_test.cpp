// The one path, measure -> plan -> reserve -> capture -> launch, on host memory with a stand-in
// capture whose "kernels" are host functions: every backward checks what its forward saved.

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

// A plan whose slot maps send every microbatch to slot 0: a planted slot wrap.
plan::plan wrapped_plan(graphs_type& planner) {
  plan::plan p = planner.plan();
  for (plan::slot_map& map : p.slot_maps) {
    for (std::vector<int>& chunk : map.slots) std::fill(chunk.begin(), chunk.end(), 0);
  }
  return p;
}

}  // namespace

TEST_CASE("variant_graphs: a planted slot wrap corrupts data without the guard, and the guard from the environment "
          "refuses it before enqueue", "[variant_graphs][guard]") {
  host_resource host;
  world w;
  variant_options no_guard;
  no_guard.guard = false;
  graphs_type planner(host, pipeline_model(), no_guard);
  planner.measure(stream, forward_body(w), backward_body(w));
  const plan::plan wrapped = wrapped_plan((planner.make_plan(), planner));
  {
    graphs_type graphs(host, pipeline_model(), no_guard);
    graphs.measure(stream, forward_body(w), backward_body(w));
    graphs.use_plan(wrapped);
    graphs.reserve();
    graphs.capture(stream);
    replay(graphs, w, plan::schedule::interleaved(4, 0, 8, 2, 4));
    CHECK(w.mismatches > 0);  // the data check sees the overwrite
  }
  REQUIRE(setenv("GRAPHPOOL_SLOT_DEBUG", "1", 1) == 0);
  graphs_type graphs(host, pipeline_model());  // options default: the guard follows the environment
  REQUIRE(unsetenv("GRAPHPOOL_SLOT_DEBUG") == 0);
  CHECK(graphs.guard().enabled());
  graphs.measure(stream, forward_body(w), backward_body(w));
  graphs.use_plan(wrapped);
  graphs.reserve();
  graphs.capture(stream);
  const int launches = knobs().launches;
  graphs.begin_step(8);
  graphs.forward(chunk_id{0}, 0, layer_id{0}, branch_id{0}, stream);
  CHECK(knobs().launches == launches + 1);
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 1, layer_id{0}, branch_id{1}, stream),
                    contains_text("slot guard: the forward of chunk 0 microbatch 1 layer 0 (branch cp2) would overwrite "
                                  "arena 0 bytes ["));
  CHECK_THROWS_WITH(graphs.forward(chunk_id{0}, 1, layer_id{0}, branch_id{1}, stream),
                    contains_text("still held by chunk 0 microbatch 0 layer 0 (branch cp1) whose backward has not run"));
  CHECK(knobs().launches == launches + 1);  // refused before anything was enqueued
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
  const auto frame = static_cast<std::uint32_t>(detail::first_frames(graphs.plan())[1] + copy * 2 + 1);
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
}
