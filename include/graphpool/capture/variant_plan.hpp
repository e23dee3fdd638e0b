#pragma once
/// @file variant_plan.hpp
/// @brief The bridge from a measurement to a plan and from a plan to arenas, for variant_graphs:
/// the model, the planning problem, the checks of a plan against the measurement, and the arena
/// declarations that put every frame at its planned offset.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/capture/frame_memory.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/plan/plan_check.hpp"
#include "graphpool/plan/planner.hpp"

namespace graphpool {

/// @brief What a runtime runs: its branches, its chunks' layers, and the schedules it will replay.
struct variant_model {
  std::vector<std::string> branches;        ///< the variants; branch_id b is branches[b]
  std::vector<int> layers_per_chunk{1};     ///< one entry per chunk, or one for every chunk
  std::vector<plan::schedule> schedules;    ///< every schedule replayed; empty: one microbatch in flight
};

namespace detail {

/// @brief Validates `model` and completes it: one layer count per chunk, and a schedule of one
/// microbatch in flight when none is given (every chunk's forward, then every backward).
[[nodiscard]] inline variant_model checked_model(variant_model model) {
  if (model.branches.empty()) throw error("variant_graphs: no branch given; name at least one variant");
  for (std::size_t b = 0; b < model.branches.size(); ++b) {
    if (model.branches[b].empty()) throw error("variant_graphs: branch " + std::to_string(b) + " has an empty name");
    for (std::size_t o = 0; o < b; ++o) {
      if (model.branches[o] == model.branches[b]) {
        throw error("variant_graphs: two branches are named '" + model.branches[b] + "'; branch names must differ");
      }
    }
  }
  if (model.layers_per_chunk.empty()) throw error("variant_graphs: no layer count given; give one per chunk");
  for (int layers : model.layers_per_chunk) {
    if (layers < 0) throw error("variant_graphs: a chunk has " + std::to_string(layers) + " layers; counts cannot be negative");
  }
  if (model.schedules.empty()) {
    const int chunks = static_cast<int>(model.layers_per_chunk.size());
    std::vector<int> order;
    for (int c = 1; c <= chunks; ++c) order.push_back(c);
    for (int c = chunks; c >= 1; --c) order.push_back(-c);
    model.schedules.push_back(plan::schedule::from_order(order, chunks, "one microbatch in flight"));
  }
  const int chunks = plan::common_chunks(model.schedules);
  if (model.layers_per_chunk.size() == 1) model.layers_per_chunk.assign(static_cast<std::size_t>(chunks), model.layers_per_chunk[0]);
  if (model.layers_per_chunk.size() != static_cast<std::size_t>(chunks)) {
    throw error("variant_graphs: " + std::to_string(model.layers_per_chunk.size()) + " layer counts for schedules of " +
                std::to_string(chunks) + " chunk(s); give one per chunk, or one for all");
  }
  return model;
}

/// @return the branch of `model` called `name`.
[[nodiscard]] inline branch_id find_branch(const variant_model& model, const std::string& name) {
  for (std::size_t b = 0; b < model.branches.size(); ++b) {
    if (model.branches[b] == name) return branch_id{static_cast<std::uint32_t>(b)};
  }
  std::string names;
  for (const std::string& n : model.branches) names += (names.empty() ? "'" : ", '") + n + "'";
  throw error("variant_graphs: no branch named '" + name + "'; the branches are " + names);
}

using measurement = std::vector<std::vector<std::vector<measured_layer>>>;  // [chunk][layer][branch]

/// @return a measurement of `model` with nothing recorded yet: every (chunk, layer, branch) empty.
[[nodiscard]] inline measurement empty_measurement(const variant_model& model) {
  measurement result(model.layers_per_chunk.size());
  for (std::size_t c = 0; c < result.size(); ++c) {
    result[c].assign(static_cast<std::size_t>(model.layers_per_chunk[c]), std::vector<measured_layer>(model.branches.size()));
  }
  return result;
}

/// @return true when two measurements recorded the same requests, in the same order.
[[nodiscard]] inline bool same_requests(const measurement& a, const measurement& b) {
  auto same = [](const std::vector<recorded_request>& x, const std::vector<recorded_request>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const recorded_request& p, const recorded_request& q) {
      return p.kind == q.kind && p.bytes == q.bytes && p.alignment == q.alignment;
    });
  };
  if (a.size() != b.size()) return false;
  for (std::size_t c = 0; c < a.size(); ++c) {
    if (a[c].size() != b[c].size()) return false;
    for (std::size_t l = 0; l < a[c].size(); ++l) {
      if (a[c][l].size() != b[c][l].size()) return false;
      for (std::size_t br = 0; br < a[c][l].size(); ++br) {
        if (!same(a[c][l][br].forward, b[c][l][br].forward) || !same(a[c][l][br].gradients, b[c][l][br].gradients)) {
          return false;
        }
      }
    }
  }
  return true;
}

/// @return the bytes `layout` spans, its parts placed in order, each aligned.
[[nodiscard]] inline std::size_t extent_of(const branch_layout& layout) {
  return place_branch("a measured layer", "measured", layout).extent;
}

/// @return the strictest alignment of any measured part (at least graphpool's default).
[[nodiscard]] inline std::size_t measured_alignment(const measurement& measured) {
  std::size_t alignment = default_alignment;
  for (const auto& chunk : measured) {
    for (const auto& layer : chunk) {
      for (const measured_layer& m : layer) {
        alignment = std::max({alignment, alignment_of(m.saved_layout()), alignment_of(m.gradient_layout())});
      }
    }
  }
  return alignment;
}

/// @return where each layer's returned gradients start inside its (chunk, slot)'s gradient region
/// (the largest branch of each layer, in order), and the region's size as the last element.
[[nodiscard]] inline std::vector<std::size_t> gradient_offsets(const measurement& measured, std::size_t chunk,
                                                               std::size_t alignment) {
  std::vector<std::size_t> offsets{0};
  for (const auto& layer : measured[chunk]) {
    std::size_t largest = 0;
    for (const measured_layer& m : layer) largest = std::max(largest, extent_of(m.gradient_layout()));
    offsets.push_back(offsets.back() + align_up(largest, alignment));
  }
  return offsets;
}

/// @brief The planner's input from the model and the measured requests: each (chunk, layer, branch)
/// saves its measured extent; each (chunk, slot) returns the largest gradient region.
[[nodiscard]] inline plan::problem planning_problem(const variant_model& model, const measurement& measured) {
  plan::problem p;
  p.schedules = model.schedules;
  p.layers_per_chunk = model.layers_per_chunk;
  p.alignment = measured_alignment(measured);
  std::size_t gradients = 0;
  for (std::size_t c = 0; c < measured.size(); ++c) gradients = std::max(gradients, gradient_offsets(measured, c, p.alignment).back());
  for (const std::string& name : model.branches) p.branches.push_back({name, 0, gradients});
  for (std::size_t c = 0; c < measured.size(); ++c) {
    for (std::size_t l = 0; l < measured[c].size(); ++l) {
      for (std::size_t b = 0; b < model.branches.size(); ++b) {
        p.overrides.push_back({static_cast<int>(c), static_cast<int>(l), model.branches[b],
                               extent_of(measured[c][l][b].saved_layout())});
      }
    }
  }
  return p;
}

/// @brief Throws unless `p` fits the model and holds every measured request: the same chunks, layers
/// and branches, parts that fit together and serve every schedule of the model (plan::check_replay:
/// no two frames alive together on the same bytes), every frame and gradient large enough for every
/// branch.
inline void check_plan(const plan::plan& p, const variant_model& model, const measurement& measured) {
  const std::string fix = "; make the plan from this model's measurement";
  if (p.layers_per_chunk != model.layers_per_chunk) {
    throw error("the plan's layers per chunk differ from the model's (" + std::to_string(p.layers_per_chunk.size()) +
                " vs " + std::to_string(model.layers_per_chunk.size()) + " chunk(s))" + fix);
  }
  if (p.branches != model.branches) {
    throw error("the plan's branches differ from the model's (" + std::to_string(p.branches.size()) + " vs " +
                std::to_string(model.branches.size()) + ", same names in the same order needed)" + fix);
  }
  if (p.slot_maps.empty()) throw error("the plan has no slot map" + fix);
  plan::check_replay(p, model.schedules);
  const plan::frame_index frame_at(p);
  const std::size_t alignment = measured_alignment(measured);
  for (std::size_t c = 0; c < measured.size(); ++c) {
    const std::vector<std::size_t> gradient_at = gradient_offsets(measured, c, alignment);
    for (int s = 0; s < p.slots; ++s) {
      for (std::size_t l = 0; l < measured[c].size(); ++l) {
        const plan::planned_frame& f = p.frames[frame_at(c, static_cast<std::size_t>(s), l)];
        for (std::size_t b = 0; b < model.branches.size(); ++b) {
          const std::size_t need = extent_of(measured[c][l][b].saved_layout());
          if (need > f.bytes) {
            throw error("plan frame (" + plan::describe_frame(f) + ") holds " + std::to_string(f.bytes) + " bytes but branch '" +
                        model.branches[b] + "' requests " + std::to_string(need) +
                        " bytes there (its measured outputs and saved tensors); plan with the measured sizes");
          }
        }
      }
      if (measured[c].empty()) continue;
      const plan::planned_grad& g = p.grads[frame_at.gradient(c, static_cast<std::size_t>(s))];
      if (gradient_at.back() > g.bytes) {
        throw error("plan gradient of chunk " + std::to_string(c) + " slot " + std::to_string(s) + " holds " +
                    std::to_string(g.bytes) + " bytes but the layers' backwards return " +
                    std::to_string(gradient_at.back()) + " bytes; plan with the measured sizes");
      }
    }
  }
}

/// @brief Declares the plan on `arenas`: its saved-tensor arenas, then its gradient arenas; for
/// frame i, slot 2i holds its outputs and saved tensors at the frame's offset and slot 2i+1 the
/// gradients its backward returns, each with one branch per model branch. `p` has passed check_plan().
template <class Upstream>
void declare_plan(arena_allocator<Upstream>& arenas, const plan::plan& p, const variant_model& model,
                  const measurement& measured) {
  const bool offsets = p.mode == plan::assignment::offsets;
  std::vector<arena_id> saved_arenas;
  for (std::size_t a = 0; a < p.arena_bytes.size(); ++a) {
    saved_arenas.push_back(arenas.declare_arena(offsets ? "frames" : "frames color " + std::to_string(a)));
  }
  std::vector<arena_id> gradient_arenas;
  for (std::size_t a = 0; a < p.grad_arena_bytes.size(); ++a) {
    gradient_arenas.push_back(arenas.declare_arena(offsets ? "gradients" : "gradients color " + std::to_string(a)));
  }
  const std::size_t alignment = measured_alignment(measured);
  const plan::frame_index frame_at(p);
  for (const plan::planned_frame& f : p.frames) {
    const auto c = static_cast<std::size_t>(f.chunk);
    const auto l = static_cast<std::size_t>(f.layer);
    const slot_id frame = arenas.declare_slot(plan::describe_frame(f), saved_arenas[f.arena], f.offset);
    const plan::planned_grad& g = p.grads[frame_at.gradient(c, static_cast<std::size_t>(f.slot))];
    const slot_id gradients = arenas.declare_slot(plan::describe_frame(f) + " gradients", gradient_arenas[g.arena],
                                                  g.offset + gradient_offsets(measured, c, alignment)[l]);
    for (std::size_t b = 0; b < model.branches.size(); ++b) {
      arenas.declare_branch(frame, model.branches[b], measured[c][l][b].saved_layout());
      arenas.declare_branch(gradients, model.branches[b], measured[c][l][b].gradient_layout());
    }
  }
}

/// @brief check_plan(), then declare_plan() on an allocator over `upstream` made in `arenas` (empty
/// before); when either throws, `arenas` stays empty.
template <class Upstream>
void declare_checked_plan(std::optional<arena_allocator<Upstream>>& arenas, Upstream& upstream, const plan::plan& p,
                          const variant_model& model, const measurement& measured) {
  check_plan(p, model, measured);
  arenas.emplace(upstream);
  try {
    declare_plan(*arenas, p, model, measured);
  } catch (...) {
    arenas.reset();
    throw;
  }
}

/// @return the memory of (chunk, slot, branch)'s layers for its real captures; `frame_at` is `p`'s frame index.
template <class Upstream>
[[nodiscard]] replaying_memory frame_memories(const arena_allocator<Upstream>& arenas, const plan::plan& p,
                                              const plan::frame_index& frame_at, const variant_model& model,
                                              const measurement& measured, chunk_id chunk, slot_id slot,
                                              branch_id branch) {
  const auto layers = static_cast<std::size_t>(p.layers_per_chunk[chunk.index]);
  std::vector<replaying_memory::layer_memory> memory;
  for (std::size_t l = 0; l < layers; ++l) {
    const auto frame = static_cast<std::uint32_t>(frame_at(chunk.index, slot.index, l));
    memory.push_back({&measured[chunk.index][l][branch.index], arenas.view(slot_id{2 * frame}, branch),
                      arenas.view(slot_id{2 * frame + 1}, branch)});
  }
  return replaying_memory(chunk.describe() + " " + slot.describe() + " branch '" + model.branches[branch.index] + "'",
                          std::move(memory));
}

}  // namespace detail
}  // namespace graphpool
