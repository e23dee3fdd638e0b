#pragma once
// An independent check of a plan against its schedules: it replays every schedule itself through the
// plan's slot maps (no conflict graph, no planner code) and fails when a map sends two microbatches
// alive together to one copy, when two frames alive at the same time share bytes, or when a frame or
// a returned gradient is too small, lies outside its arena, or the arenas do not add up.

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "graphpool/plan/planner.hpp"

namespace graphpool::testing {

struct verification {
  bool ok = true;
  std::string problem;               // the first violation found
  std::size_t live_peak_bytes = 0;   // most frame bytes alive at once, over every schedule
};

namespace detail {

struct frame_memory {
  std::size_t arena;
  std::size_t offset;
  std::size_t bytes;
};

inline bool share_bytes(const frame_memory& a, const frame_memory& b) {
  if (a.bytes == 0 || b.bytes == 0 || a.arena != b.arena) return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

}  // namespace detail

inline verification verify_plan(const plan::problem& input, const plan::plan& result) {
  verification v;
  auto fail = [&](const std::string& why) {
    if (v.ok) v.problem = why;
    v.ok = false;
  };
  const int slots = result.slots;
  // frames[(chunk * slots + slot)][layer]
  std::vector<std::vector<detail::frame_memory>> frames(static_cast<std::size_t>(result.chunks * slots));
  for (const plan::planned_frame& f : result.frames) {
    auto& group = frames[static_cast<std::size_t>(f.chunk * slots + f.slot)];
    if (static_cast<int>(group.size()) != f.layer) fail("frames are not chunk-major, slot, layer");
    group.push_back({f.arena, f.offset, f.bytes});
    auto name = [&] {  // built only for a message
      return "frame (" + std::to_string(f.chunk) + "," + std::to_string(f.slot) + "," + std::to_string(f.layer) + ")";
    };
    if (f.arena >= result.arena_bytes.size() || f.offset + f.bytes > result.arena_bytes[f.arena]) {
      fail(name() + " lies outside its arena");
    }
    if (f.offset % input.alignment != 0 || f.bytes % input.alignment != 0) {
      fail(name() + " at offset " + std::to_string(f.offset) + ", " + std::to_string(f.bytes) +
           " bytes, is not aligned to " + std::to_string(input.alignment));
    }
    // The frame must hold every branch's saved bytes.
    for (const plan::branch_sizes& b : input.branches) {
      std::size_t need = b.saved_per_layer;
      for (const plan::saved_bytes_override& o : input.overrides) {
        if (o.chunk == f.chunk && o.layer == f.layer && o.branch == b.name) need = o.saved;
      }
      if (f.bytes < need) fail(name() + " is smaller than branch " + b.name + " needs");
    }
  }
  std::size_t total = 0;
  for (std::size_t a : result.arena_bytes) total += a;
  if (total != result.saved.footprint_bytes) fail("arena sizes do not add up to the footprint");

  std::vector<detail::frame_memory> grads(static_cast<std::size_t>(result.chunks * slots), {0, 0, 0});
  std::vector<bool> has_grad(grads.size(), false);
  for (const plan::planned_grad& g : result.grads) {
    const std::string name = "gradient (" + std::to_string(g.chunk) + "," + std::to_string(g.slot) + ")";
    if (g.chunk < 0 || g.chunk >= result.chunks || g.slot < 0 || g.slot >= slots) {
      fail(name + " names no (chunk, slot)");
      continue;
    }
    const std::size_t index = static_cast<std::size_t>(g.chunk * slots + g.slot);
    if (has_grad[index]) fail(name + " is planned twice");
    has_grad[index] = true;
    grads[index] = {g.arena, g.offset, g.bytes};
    if (g.arena >= result.grad_arena_bytes.size() || g.offset + g.bytes > result.grad_arena_bytes[g.arena]) {
      fail(name + " lies outside its arena");
    }
    if (g.offset % input.alignment != 0) fail(name + " at offset " + std::to_string(g.offset) + " is not aligned");
    for (const plan::branch_sizes& b : input.branches) {
      if (g.bytes < b.grad_per_slot) fail(name + " smaller than branch " + b.name + " returns");
    }
  }
  std::size_t grad_total = 0;
  for (std::size_t a : result.grad_arena_bytes) grad_total += a;
  if (grad_total != result.grad.footprint_bytes) fail("gradient arena sizes do not add up to the gradient footprint");
  for (int c = 0; c < result.chunks; ++c) {
    const bool layers = !result.layers_per_chunk.empty() && result.layers_per_chunk[static_cast<std::size_t>(c)] > 0;
    for (int slot = 0; slot < slots; ++slot) {
      if (layers && !has_grad[static_cast<std::size_t>(c * slots + slot)]) {
        fail("chunk " + std::to_string(c) + " slot " + std::to_string(slot) + " returns no planned gradient");
      }
    }
  }

  if (result.slot_maps.size() != input.schedules.size()) fail("not one slot map per schedule");
  for (std::size_t k = 0; k < input.schedules.size() && k < result.slot_maps.size(); ++k) {
    const plan::schedule& s = input.schedules[k];
    const plan::slot_map& map = result.slot_maps[k];
    if (map.microbatches != s.microbatches() || map.slots.size() != static_cast<std::size_t>(result.chunks)) {
      fail("the slot map of " + s.name() + " has the wrong shape");
      continue;
    }
    for (const std::vector<int>& row : map.slots) {
      if (row.size() != static_cast<std::size_t>(s.microbatches())) fail("the slot map of " + s.name() + " has the wrong shape");
      for (int copy : row) {
        if (copy < 0 || copy >= slots) fail("the slot map of " + s.name() + " names a copy outside [0, slots)");
      }
    }
  }
  if (!v.ok) return v;
  if (plan::find_slot_map(result, result.microbatches).microbatches != result.microbatches) fail("find_slot_map");

  for (std::size_t k = 0; k < input.schedules.size(); ++k) {
    const plan::schedule& s = input.schedules[k];
    const plan::slot_map& map = result.slot_maps[k];
    auto group_of = [&](int chunk, int microbatch) {
      return static_cast<std::size_t>(chunk * slots + map.slots[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(microbatch)]);
    };
    std::vector<std::deque<int>> pending(static_cast<std::size_t>(result.chunks));
    std::vector<int> next_forward(static_cast<std::size_t>(result.chunks), 0);
    std::vector<std::size_t> alive;  // groups alive now
    std::size_t live = 0;
    std::size_t previous_grad = static_cast<std::size_t>(-1);
    for (int id : s.order()) {
      const int chunk = (id > 0 ? id : -id) - 1;
      if (id > 0) {
        const int microbatch = next_forward[static_cast<std::size_t>(chunk)]++;
        pending[static_cast<std::size_t>(chunk)].push_back(microbatch);
        const std::size_t group = group_of(chunk, microbatch);
        for (std::size_t other : alive) {
          if (other == group) fail("a copy is replayed by two microbatches alive together in " + s.name());
          for (const auto& a : frames[group]) {
            for (const auto& b : frames[other]) {
              if (detail::share_bytes(a, b)) fail("frames alive together share bytes in " + s.name());
            }
          }
        }
        for (std::size_t i = 0; i < frames[group].size(); ++i) {
          for (std::size_t j = i + 1; j < frames[group].size(); ++j) {
            if (detail::share_bytes(frames[group][i], frames[group][j])) fail("two layers of one frame share bytes");
          }
        }
        alive.push_back(group);
        for (const auto& f : frames[group]) live += f.bytes;
        v.live_peak_bytes = std::max(v.live_peak_bytes, live);
      } else {
        const int microbatch = pending[static_cast<std::size_t>(chunk)].front();
        pending[static_cast<std::size_t>(chunk)].pop_front();
        const std::size_t group = group_of(chunk, microbatch);
        for (std::size_t i = 0; i < alive.size(); ++i) {
          if (alive[i] == group) {
            alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          }
        }
        for (const auto& f : frames[group]) live -= f.bytes;
        if (previous_grad != static_cast<std::size_t>(-1) && previous_grad != group &&
            detail::share_bytes(grads[previous_grad], grads[group])) {
          fail("gradients of consecutive backwards share bytes in " + s.name());
        }
        previous_grad = group;
      }
    }
  }
  if (result.saved.live_bound_bytes != v.live_peak_bytes) fail("the reported live bound is not the replayed peak");
  if (result.saved.lower_bound_bytes < v.live_peak_bytes) fail("the clique bound is below bytes alive at once");
  if (result.saved.footprint_bytes < result.saved.lower_bound_bytes) fail("the footprint is below the lower bound");
  return v;
}

}  // namespace graphpool::testing
