#pragma once
/// @file plan_check.hpp
/// @brief Checks a plan made elsewhere (read from JSON, kept from an earlier run) before anything is laid
/// out from it: its parts fit together (check_structure), and replaying the given schedules through its
/// slot maps never puts two frames alive together on the same bytes (check_replay). Host-only: no CUDA
/// header.

#include <cstddef>
#include <string>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::plan {

namespace detail {

/// @return whether [offset, offset + bytes) of `arena` and of `other_arena` share a byte.
[[nodiscard]] inline bool share_bytes(std::size_t arena, std::size_t offset, std::size_t bytes, std::size_t other_arena,
                                      std::size_t other_offset, std::size_t other_bytes) noexcept {
  return arena == other_arena && bytes > 0 && other_bytes > 0 && offset < other_offset + other_bytes &&
         other_offset < offset + bytes;
}

/// Throws unless [offset, offset + bytes) lies within `arena_bytes` (no sum overflows).
inline void check_in_arena(std::size_t offset, std::size_t bytes, std::size_t arena_bytes, const std::string& what) {
  if (bytes > arena_bytes || offset > arena_bytes - bytes) {
    throw error(what + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " run past the end of its arena (" + std::to_string(arena_bytes) + " bytes)");
  }
}

/// Throws unless a plan's chunk count is 1 to schedule::max_chunks; `where` starts the message.
inline void check_chunk_count(int chunks, const std::string& where) {
  if (chunks < 1 || chunks > schedule::max_chunks) {
    throw error(where + ": " + std::to_string(chunks) + " chunk(s); a plan has 1 to " +
                std::to_string(schedule::max_chunks));
  }
}

}  // namespace detail

/// @brief Throws unless the parts of `p` fit together, so that nothing reading it indexes out of range:
/// at most schedule::max_chunks chunks and max_frames (chunk, slot) pairs; a layer count per chunk; frames chunk-major,
/// then slot, then layer, one per (chunk, slot, layer); a returned gradient per (chunk, slot) of a chunk
/// with layers, in order; every frame and gradient inside its arena; slot maps of one row per chunk, one
/// entry per microbatch, each a slot the plan has. Messages start with `where` (e.g. "plan JSON").
inline void check_structure(const plan& p, const std::string& where) {
  detail::check_chunk_count(p.chunks, where);
  if (p.slots < 1 || static_cast<std::size_t>(p.chunks) * static_cast<std::size_t>(p.slots) > max_frames) {
    throw error(where + ": " + std::to_string(p.slots) + " slot(s) per chunk; a plan has at least 1 and at most " +
                std::to_string(max_frames) + " (chunk, slot) pairs");
  }
  if (p.layers_per_chunk.size() != static_cast<std::size_t>(p.chunks)) {
    throw error(where + ": " + std::to_string(p.layers_per_chunk.size()) + " layer count(s) for " +
                std::to_string(p.chunks) + " chunk(s)");
  }
  std::size_t frames = 0;
  std::size_t grads = 0;
  for (int layers : p.layers_per_chunk) {
    if (layers < 0) throw error(where + ": a chunk has " + std::to_string(layers) + " layers");
    frames += static_cast<std::size_t>(layers) * static_cast<std::size_t>(p.slots);
    if (layers > 0) grads += static_cast<std::size_t>(p.slots);
  }
  if (frames > max_frames || p.frames.size() != frames) {
    throw error(where + ": " + std::to_string(p.frames.size()) + " frame(s), where " + std::to_string(p.chunks) +
                " chunk(s) of " + std::to_string(p.slots) + " slot(s) and their layers need " + std::to_string(frames) +
                " (at most " + std::to_string(max_frames) + ")");
  }
  const frame_index frame_at(p);
  for (int c = 0; c < p.chunks; ++c) {
    for (int s = 0; s < p.slots; ++s) {
      for (int l = 0; l < p.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
        const std::size_t index =
            frame_at(static_cast<std::size_t>(c), static_cast<std::size_t>(s), static_cast<std::size_t>(l));
        const planned_frame& f = p.frames[index];
        if (f.chunk != c || f.slot != s || f.layer != l) {
          throw error(where + ": frame " + std::to_string(index) + " is (" + describe_frame(f) +
                      "), not (chunk " + std::to_string(c) + " slot " + std::to_string(s) + " layer " + std::to_string(l) +
                      "): frames go chunk-major, then slot, then layer");
        }
        if (f.arena >= p.arena_bytes.size()) {
          throw error(where + ": frame (" + describe_frame(f) + ") is in arena " + std::to_string(f.arena) +
                      " of " + std::to_string(p.arena_bytes.size()));
        }
        detail::check_in_arena(f.offset, f.bytes, p.arena_bytes[f.arena],
                               where + ": frame (" + describe_frame(f) + ")");
      }
    }
  }
  if (p.grads.size() != grads) {
    throw error(where + ": " + std::to_string(p.grads.size()) + " returned gradient(s), where the chunks with layers need " +
                std::to_string(grads) + " (one per slot)");
  }
  for (int c = 0; c < p.chunks; ++c) {
    if (p.layers_per_chunk[static_cast<std::size_t>(c)] == 0) continue;
    for (int s = 0; s < p.slots; ++s) {
      const std::size_t index = frame_at.gradient(static_cast<std::size_t>(c), static_cast<std::size_t>(s));
      const planned_grad& g = p.grads[index];
      const std::string what = where + ": the gradient of chunk " + std::to_string(c) + " slot " + std::to_string(s);
      if (g.chunk != c || g.slot != s) throw error(what + " is not in its place (" + std::to_string(index) + ")");
      if (g.arena >= p.grad_arena_bytes.size()) {
        throw error(what + " is in arena " + std::to_string(g.arena) + " of " + std::to_string(p.grad_arena_bytes.size()));
      }
      detail::check_in_arena(g.offset, g.bytes, p.grad_arena_bytes[g.arena], what);
    }
  }
  for (const slot_map& map : p.slot_maps) {
    const std::string what = where + ": the slot map for '" + map.schedule + "'";
    if (map.microbatches < 1 || map.slots.size() != static_cast<std::size_t>(p.chunks)) {
      throw error(what + " has " + std::to_string(map.slots.size()) + " row(s) for " + std::to_string(map.microbatches) +
                  " microbatch(es); it needs one row per chunk (" + std::to_string(p.chunks) + ") and a microbatch or more");
    }
    for (std::size_t c = 0; c < map.slots.size(); ++c) {
      if (map.slots[c].size() != static_cast<std::size_t>(map.microbatches)) {
        throw error(what + " gives chunk " + std::to_string(c) + " " + std::to_string(map.slots[c].size()) +
                    " entries for " + std::to_string(map.microbatches) + " microbatch(es)");
      }
      for (int slot : map.slots[c]) {
        if (slot < 0 || slot >= p.slots) {
          throw error(what + " names slot " + std::to_string(slot) + " of chunk " + std::to_string(c) + "; the plan has " +
                      std::to_string(p.slots));
        }
      }
    }
  }
}

/// @brief Throws unless `p` serves every one of `schedules` as a runtime replays them: check_structure,
/// then for each schedule the slot map a runtime picks for it (find_slot_map: by microbatch count) sends
/// no microbatch to a copy still alive for another (the error names the schedule, the entry, the copy
/// and the microbatch holding it), and no two frames (or returned gradients) alive together share a byte
/// or a color (what te_slots gives TransformerEngine as their arena; the error names the schedule and both).
inline void check_replay(const plan& p, const std::vector<schedule>& schedules) {
  check_structure(p, "plan");
  const auto slots = static_cast<std::size_t>(p.slots);
  // Per (chunk, slot) group: its frames' indices, and its returned gradient's (none for a chunk without layers).
  std::vector<std::vector<std::size_t>> frames_of(static_cast<std::size_t>(p.chunks) * slots);
  std::vector<const planned_grad*> grad_of(frames_of.size(), nullptr);
  for (std::size_t i = 0; i < p.frames.size(); ++i) {
    frames_of[static_cast<std::size_t>(p.frames[i].chunk) * slots + static_cast<std::size_t>(p.frames[i].slot)].push_back(i);
  }
  for (const planned_grad& g : p.grads) {
    grad_of[static_cast<std::size_t>(g.chunk) * slots + static_cast<std::size_t>(g.slot)] = &g;
  }
  // Two parts alive together clash when they share a byte, or a known color while both hold bytes.
  auto clash = [](const auto& a, const auto& b) -> std::string {
    if (detail::share_bytes(a.arena, a.offset, a.bytes, b.arena, b.offset, b.bytes)) {
      return "share bytes of arena " + std::to_string(a.arena);
    }
    if (a.color == b.color && a.color != unknown_color && a.bytes > 0 && b.bytes > 0) {
      return "share color " + std::to_string(a.color) + " (TransformerEngine's arena in te_slots)";
    }
    return {};
  };
  auto frames_apart = [&](std::size_t g, std::size_t h, const std::string& when) {
    for (std::size_t i : frames_of[g]) {
      for (std::size_t j : frames_of[h]) {
        if (g == h && j <= i) continue;
        const std::string how = clash(p.frames[i], p.frames[j]);
        if (!how.empty()) {
          throw error("plan: frames (" + describe_frame(p.frames[i]) + ") and (" + describe_frame(p.frames[j]) + ") " +
                      how + " but are alive together " + when);
        }
      }
    }
  };
  for (std::size_t g = 0; g < frames_of.size(); ++g) frames_apart(g, g, "(layers of one copy)");
  for (const schedule& s : schedules) {
    if (s.chunks() != p.chunks) {
      throw error("plan: schedule '" + s.name() + "' runs " + std::to_string(s.chunks()) + " chunk(s), the plan has " +
                  std::to_string(p.chunks));
    }
    const liveness alive = analyze({s}, {find_slot_map(p, s.microbatches())}, p.slots, false);
    const std::string when = "in schedule '" + s.name() + "'; plan with every schedule you replay";
    for (std::size_t g = 0; g < frames_of.size(); ++g) {
      alive.saved.for_each_neighbor(g, [&](std::size_t h) {
        if (h > g) frames_apart(g, h, when);
      });
      alive.grads.for_each_neighbor(g, [&](std::size_t h) {
        const planned_grad* a = grad_of[g];
        const planned_grad* b = grad_of[h];
        if (h <= g || a == nullptr || b == nullptr) return;
        const std::string how = clash(*a, *b);
        if (!how.empty()) {
          throw error("plan: the returned gradients of chunk " + std::to_string(a->chunk) + " slot " +
                      std::to_string(a->slot) + " and chunk " + std::to_string(b->chunk) + " slot " +
                      std::to_string(b->slot) + " " + how + " but are alive together " + when);
        }
      });
    }
  }
}

}  // namespace graphpool::plan
