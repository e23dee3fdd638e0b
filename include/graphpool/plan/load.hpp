#pragma once
/// @file load.hpp
/// @brief Reads a plan written by `graphpool-plan --json` (or plan::to_json) back into a plan::plan,
/// so a runtime can reserve and capture from a plan made offline. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "graphpool/detail/json.hpp"
#include "graphpool/error.hpp"
#include "graphpool/plan/plan_check.hpp"
#include "graphpool/plan/planner.hpp"

namespace graphpool::plan {

namespace detail {

[[nodiscard]] inline int small_integer(const graphpool::detail::json_value& v, const std::string& where) {
  const unsigned long long value = v.unsigned_integer(where);
  if (value > static_cast<unsigned long long>(std::numeric_limits<int>::max())) {
    throw error(where + ": " + std::to_string(value) + " is too large");
  }
  return static_cast<int>(value);
}

[[nodiscard]] inline std::vector<std::size_t> sizes(const graphpool::detail::json_value& v, const std::string& where) {
  std::vector<std::size_t> out;
  for (const auto& item : v.array(where)) out.push_back(static_cast<std::size_t>(item.unsigned_integer(where)));
  return out;
}

/// Reads what a frame and a gradient share: chunk, slot, arena, offset, bytes and color (documents
/// without colors: the arena in coloring mode, unknown_color in offsets mode).
template <class Placed>
void read_placed(const graphpool::detail::json_value& v, const std::string& at, assignment mode, Placed& placed) {
  placed.chunk = small_integer(v.at("chunk", at), at + " chunk");
  placed.slot = small_integer(v.at("slot", at), at + " slot");
  placed.arena = static_cast<std::size_t>(v.at("arena", at).unsigned_integer(at + " arena"));
  placed.offset = static_cast<std::size_t>(v.at("offset", at).unsigned_integer(at + " offset"));
  placed.bytes = static_cast<std::size_t>(v.at("bytes", at).unsigned_integer(at + " bytes"));
  placed.color = v.has("color") ? static_cast<std::size_t>(v.at("color", at).unsigned_integer(at + " color"))
                 : mode == assignment::coloring ? placed.arena
                                                : unknown_color;
}

inline void read_figures(const graphpool::detail::json_value& v, plan_figures& f, const std::string& where) {
  f.footprint_bytes =
      static_cast<std::size_t>(v.at("footprint_bytes", where).unsigned_integer(where + " footprint_bytes"));
  f.lower_bound_bytes =
      static_cast<std::size_t>(v.at("lower_bound_bytes", where).unsigned_integer(where + " lower_bound_bytes"));
  f.live_bound_bytes =
      static_cast<std::size_t>(v.at("live_bound_bytes", where).unsigned_integer(where + " live_bound_bytes"));
  f.naive_bytes = static_cast<std::size_t>(v.at("naive_bytes", where).unsigned_integer(where + " naive_bytes"));
  f.lower_bound_exact =
      v.has("lower_bound_exact") && v.at("lower_bound_exact", where).boolean_value(where + " lower_bound_exact");
  if (v.has("coloring_bytes")) {
    f.coloring_bytes = static_cast<std::size_t>(v.at("coloring_bytes", where).unsigned_integer(where + " coloring_bytes"));
  }
  if (v.has("coloring_arenas")) {
    f.coloring_arenas = static_cast<std::size_t>(v.at("coloring_arenas", where).unsigned_integer(where + " coloring_arenas"));
  }
}

/// @return `a` where `doc`'s string at `key` is `a_name`, `b` where it is `b_name`.
/// @throws graphpool::error naming the key and the value otherwise.
template <class Choice>
[[nodiscard]] Choice either(const graphpool::detail::json_value& doc, const std::string& key, const std::string& where,
                            const std::string& a_name, Choice a, const std::string& b_name, Choice b) {
  const std::string& name = doc.at(key, where).string(where + " " + key);
  if (name == a_name) return a;
  if (name == b_name) return b;
  throw error(where + ": " + key + " \"" + name + "\" is neither \"" + a_name + "\" nor \"" + b_name + "\"");
}

}  // namespace detail

/// @return the plan in `text`, a document from to_json (`graphpool-plan --json`).
/// @throws graphpool::error naming the key or entry that is missing or malformed, or the part that does
/// not fit the others (check_structure: a frame out of order or past its arena, a slot map's row of the
/// wrong length, a slot the plan does not have).
[[nodiscard]] inline plan from_json(std::string_view text) {
  using graphpool::detail::json_value;
  const json_value doc = graphpool::detail::json_reader::parse(text);
  const std::string where = "plan JSON";
  plan p;
  p.mode = detail::either(doc, "mode", where, "offsets", assignment::offsets, "coloring", assignment::coloring);
  if (doc.has("slot_rule")) {  // documents older than the schedule rule have none: theirs is m mod S
    p.rule = detail::either(doc, "slot_rule", where, "mod", slot_rule::mod, "schedule", slot_rule::schedule);
  }
  p.chunks = detail::small_integer(doc.at("chunks", where), where + " chunks");
  p.slots = detail::small_integer(doc.at("slots", where), where + " slots");
  detail::check_chunk_count(p.chunks, where);  // before anything is sized by it
  detail::read_figures(doc, p.saved, where);
  detail::read_figures(doc.at("grad", where), p.grad, where + " grad");
  p.arena_bytes = detail::sizes(doc.at("arena_bytes", where), where + " arena_bytes");
  p.grad_arena_bytes = detail::sizes(doc.at("grad_arena_bytes", where), where + " grad_arena_bytes");
  p.saved.arenas = p.arena_bytes.size();
  p.grad.arenas = p.grad_arena_bytes.size();
  for (const json_value& b : doc.at("branches", where).array(where + " branches")) p.branches.push_back(b.string(where + " branches"));
  p.layers_per_chunk.assign(static_cast<std::size_t>(p.chunks), 0);
  const auto& frames = doc.at("frames", where).array(where + " frames");
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::string at = where + " frames[" + std::to_string(i) + "]";
    planned_frame f;
    detail::read_placed(frames[i], at, p.mode, f);
    f.layer = detail::small_integer(frames[i].at("layer", at), at + " layer");
    if (f.layer >= static_cast<int>(max_frames)) {
      throw error(at + ": layer " + std::to_string(f.layer) + " is beyond the " + std::to_string(max_frames) +
                  " frames a plan may hold");
    }
    if (f.chunk >= p.chunks || f.slot >= p.slots) {
      throw error(at + ": chunk " + std::to_string(f.chunk) + " slot " + std::to_string(f.slot) +
                  " is beyond the plan's " + std::to_string(p.chunks) + " chunk(s) of " + std::to_string(p.slots) +
                  " slot(s) (0-based)");
    }
    int& layers = p.layers_per_chunk[static_cast<std::size_t>(f.chunk)];
    layers = std::max(layers, f.layer + 1);
    p.frames.push_back(f);
  }
  const auto& grads = doc.at("grads", where).array(where + " grads");
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const std::string at = where + " grads[" + std::to_string(i) + "]";
    planned_grad g;
    detail::read_placed(grads[i], at, p.mode, g);
    p.grads.push_back(g);
  }
  const auto& maps = doc.at("slot_maps", where).array(where + " slot_maps");
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const std::string at = where + " slot_maps[" + std::to_string(i) + "]";
    slot_map map;
    map.microbatches = detail::small_integer(maps[i].at("microbatches", at), at + " microbatches");
    map.schedule = maps[i].has("schedule") ? maps[i].at("schedule", at).string(at + " schedule")
                                           : "schedule of " + std::to_string(map.microbatches) + " microbatch(es)";
    for (const json_value& chunk : maps[i].at("map", at).array(at + " map")) {
      std::vector<int>& slots = map.slots.emplace_back();
      for (const json_value& slot : chunk.array(at + " map")) slots.push_back(detail::small_integer(slot, at + " map"));
    }
    p.microbatches = std::max(p.microbatches, map.microbatches);
    p.slot_maps.push_back(std::move(map));
  }
  check_structure(p, where);
  return p;
}

}  // namespace graphpool::plan
