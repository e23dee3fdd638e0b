#pragma once
/// @file report.hpp
/// @brief A plan written out: a table for people, JSON for programs, and TransformerEngine's slot tuples.
///
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "graphpool/detail/format.hpp"
#include "graphpool/detail/json.hpp"
#include "graphpool/plan/planner.hpp"

namespace graphpool::plan {

/// @return the name of `mode` as the command line spells it.
[[nodiscard]] inline const char* to_string(assignment mode) noexcept {
  return mode == assignment::coloring ? "coloring" : "offsets";
}

/// @return a short table: slots, arenas, footprint, bounds, ratio, naive sum, coloring baseline.
[[nodiscard]] inline std::string summary_table(const plan& p) {
  using graphpool::detail::format_bytes;
  std::string text;
  char line[256];
  std::snprintf(line, sizeof(line), "plan: %s, slot rule %s, %d chunk(s), %d slot(s), %zu frame(s), %zu branch(es)\n\n",
                to_string(p.mode), to_string(p.rule), p.chunks, p.slots, p.frames.size(), p.branches.size());
  text += line;
  std::snprintf(line, sizeof(line), "%-18s %14s %14s\n", "", "saved", "returned grads");
  text += line;
  auto row = [&](const char* name, const std::string& saved, const std::string& grad) {
    std::snprintf(line, sizeof(line), "%-18s %14s %14s\n", name, saved.c_str(), grad.c_str());
    text += line;
  };
  auto ratio = [](const plan_figures& f) {
    char value[32];
    std::snprintf(value, sizeof(value), "%.3f", f.ratio());
    return std::string(value);
  };
  row("arenas", std::to_string(p.saved.arenas), std::to_string(p.grad.arenas));
  row("footprint", format_bytes(p.saved.footprint_bytes), format_bytes(p.grad.footprint_bytes));
  row("lower bound", format_bytes(p.saved.lower_bound_bytes) + (p.saved.lower_bound_exact ? "" : "*"),
      format_bytes(p.grad.lower_bound_bytes) + (p.grad.lower_bound_exact ? "" : "*"));
  row("footprint / bound", ratio(p.saved), ratio(p.grad));
  row("live bound", format_bytes(p.saved.live_bound_bytes), format_bytes(p.grad.live_bound_bytes));
  row("naive (per branch)", format_bytes(p.saved.naive_bytes), format_bytes(p.grad.naive_bytes));
  row("DSATUR coloring", format_bytes(p.saved.coloring_bytes), format_bytes(p.grad.coloring_bytes));
  row("DSATUR arenas", std::to_string(p.saved.coloring_arenas), std::to_string(p.grad.coloring_arenas));
  if (!p.saved.lower_bound_exact || !p.grad.lower_bound_exact) {
    text += "* the clique search did not finish (its effort ran out, or a layout given whole skipped it): a valid\n"
            "  but possibly weaker bound\n";
  }
  return text;
}

/// @return the plan as a JSON document: figures, arena sizes and every frame (0-based indices;
/// `bytes` is the frame's saved bytes, the max over its branches, rounded up to the alignment; `color`
/// its arena in the coloring, whatever the mode: what te_slots gives as saved_arena).
[[nodiscard]] inline std::string to_json(const plan& p) {
  std::string json = "{\n";
  char line[512];
  auto number = [&](const char* key, std::size_t value, bool comma = true) {
    std::snprintf(line, sizeof(line), "  \"%s\": %zu%s\n", key, value, comma ? "," : "");
    json += line;
  };
  auto sizes = [](const std::vector<std::size_t>& values) {
    std::string list = "[";
    for (std::size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + std::to_string(values[i]);
    return list + "]";
  };
  auto figures = [&](const plan_figures& f) {
    std::snprintf(line, sizeof(line),
                  "{\"footprint_bytes\": %zu, \"lower_bound_bytes\": %zu, \"lower_bound_exact\": %s, "
                  "\"live_bound_bytes\": %zu, \"naive_bytes\": %zu, \"coloring_bytes\": %zu, \"coloring_arenas\": %zu, "
                  "\"arenas\": %zu, \"ratio\": %.4f}",
                  f.footprint_bytes, f.lower_bound_bytes, f.lower_bound_exact ? "true" : "false", f.live_bound_bytes,
                  f.naive_bytes, f.coloring_bytes, f.coloring_arenas, f.arenas, f.ratio());
    return std::string(line);
  };
  json += std::string("  \"mode\": \"") + to_string(p.mode) + "\",\n";
  json += std::string("  \"slot_rule\": \"") + to_string(p.rule) + "\",\n";
  number("chunks", static_cast<std::size_t>(p.chunks));
  number("slots", static_cast<std::size_t>(p.slots));
  number("footprint_bytes", p.saved.footprint_bytes);
  number("lower_bound_bytes", p.saved.lower_bound_bytes);
  json += std::string("  \"lower_bound_exact\": ") + (p.saved.lower_bound_exact ? "true" : "false") + ",\n";
  number("live_bound_bytes", p.saved.live_bound_bytes);
  number("naive_bytes", p.saved.naive_bytes);
  number("coloring_bytes", p.saved.coloring_bytes);
  number("coloring_arenas", p.saved.coloring_arenas);
  std::snprintf(line, sizeof(line), "  \"ratio\": %.4f,\n", p.saved.ratio());
  json += line;
  json += "  \"arena_bytes\": " + sizes(p.arena_bytes) + ",\n";
  json += "  \"grad\": " + figures(p.grad) + ",\n";
  json += "  \"grad_arena_bytes\": " + sizes(p.grad_arena_bytes) + ",\n";
  json += "  \"branches\": [";
  for (std::size_t b = 0; b < p.branches.size(); ++b) json += (b ? ", " : "") + graphpool::detail::json_quote(p.branches[b]);
  json += "],\n  \"frames\": [\n";
  for (std::size_t i = 0; i < p.frames.size(); ++i) {
    const planned_frame& f = p.frames[i];
    std::snprintf(line, sizeof(line),
                  "    {\"chunk\": %d, \"slot\": %d, \"layer\": %d, \"arena\": %zu, \"offset\": %zu, \"bytes\": %zu, "
                  "\"color\": %zu}%s\n",
                  f.chunk, f.slot, f.layer, f.arena, f.offset, f.bytes, f.color, i + 1 < p.frames.size() ? "," : "");
    json += line;
  }
  json += "  ],\n  \"grads\": [\n";
  for (std::size_t i = 0; i < p.grads.size(); ++i) {
    const planned_grad& g = p.grads[i];
    std::snprintf(line, sizeof(line),
                  "    {\"chunk\": %d, \"slot\": %d, \"arena\": %zu, \"offset\": %zu, \"bytes\": %zu, \"color\": %zu}%s\n",
                  g.chunk, g.slot, g.arena, g.offset, g.bytes, g.color, i + 1 < p.grads.size() ? "," : "");
    json += line;
  }
  json += "  ],\n  \"slot_maps\": [\n";
  for (std::size_t i = 0; i < p.slot_maps.size(); ++i) {
    const slot_map& map = p.slot_maps[i];
    json += "    {\"microbatches\": " + std::to_string(map.microbatches) + ", \"map\": [";
    for (std::size_t c = 0; c < map.slots.size(); ++c) {
      json += c ? ", [" : "[";
      for (std::size_t m = 0; m < map.slots[c].size(); ++m) json += (m ? ", " : "") + std::to_string(map.slots[c][m]);
      json += "]";
    }
    json += std::string("]}") + (i + 1 < p.slot_maps.size() ? "," : "") + "\n";
  }
  return json + "  ]\n}\n";
}

/// @brief One of TransformerEngine's `_graph_memory_slots` tuples.
struct te_slot {
  std::size_t saved_arena = 0;
  int io_slot = 0;
  int branch = 0;
  int chunk = 0;
  int layer = 0;
  int warmup_group = 0;
  std::size_t grad_arena = 0;
};

/// @return the tuples for every graph input of `microbatches` microbatches (0: the plan's largest),
/// per branch v, chunk-major, then microbatch, then layer, as Megatron-LM fills them: saved_arena =
/// the frame's color, io_slot = the copy the plan's slot map gives microbatch m (m mod S with the
/// default mod rule), branch = v*S + io_slot, warmup_group = v * (layers in all
/// chunks) + the chunk's first layer + layer, grad_arena = the (chunk, slot) gradient's color.
/// Chunks and layers are 0-based. The arenas are the coloring's, whatever the plan's mode.
/// @throws graphpool::error when the plan has no slot map for `microbatches` (see find_slot_map), or no
/// coloring (an offsets plan read from a document without colors).
[[nodiscard]] inline std::vector<te_slot> te_slots(const plan& p, int microbatches = 0) {
  if (microbatches <= 0) microbatches = p.microbatches;
  const auto colored = [](const auto& part) { return part.color != unknown_color; };
  if (!std::all_of(p.frames.begin(), p.frames.end(), colored) || !std::all_of(p.grads.begin(), p.grads.end(), colored)) {
    throw error("te_slots: the plan has no coloring (an offsets plan read from a document written before plans "
                "carried each frame's color); write the plan again (graphpool-plan --json, or plan::to_json)");
  }
  const slot_map& map = find_slot_map(p, microbatches);
  std::vector<int> first_layer(static_cast<std::size_t>(p.chunks), 0);
  int callables = 0;
  for (int c = 0; c < p.chunks; ++c) {
    first_layer[static_cast<std::size_t>(c)] = callables;
    callables += p.layers_per_chunk[static_cast<std::size_t>(c)];
  }
  // frames and grads are chunk-major, then slot (then layer): index them directly.
  std::vector<std::size_t> first_frame(static_cast<std::size_t>(p.chunks) * static_cast<std::size_t>(p.slots), 0);
  std::vector<std::size_t> grad_color(first_frame.size(), 0);
  for (std::size_t i = p.frames.size(); i-- > 0;) {
    first_frame[static_cast<std::size_t>(p.frames[i].chunk * p.slots + p.frames[i].slot)] = i;
  }
  for (const planned_grad& g : p.grads) grad_color[static_cast<std::size_t>(g.chunk * p.slots + g.slot)] = g.color;
  std::vector<te_slot> tuples;
  for (int v = 0; v < static_cast<int>(p.branches.size()); ++v) {
    for (int c = 0; c < p.chunks; ++c) {
      for (int m = 0; m < microbatches; ++m) {
        const int s = map.slots[static_cast<std::size_t>(c)][static_cast<std::size_t>(m)];
        const std::size_t group = static_cast<std::size_t>(c * p.slots + s);
        for (int l = 0; l < p.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
          te_slot t;
          t.saved_arena = p.frames[first_frame[group] + static_cast<std::size_t>(l)].color;
          t.io_slot = s;
          t.branch = v * p.slots + s;
          t.chunk = c;
          t.layer = l;
          t.warmup_group = v * callables + first_layer[static_cast<std::size_t>(c)] + l;
          t.grad_arena = grad_color[group];
          tuples.push_back(t);
        }
      }
    }
  }
  return tuples;
}

/// @return the tuples as a Python list literal, one tuple a line.
[[nodiscard]] inline std::string te_slots_text(const std::vector<te_slot>& tuples) {
  std::string text =
      "# (saved_arena, io_slot, branch, chunk, layer, warmup_group, grad_arena)\n"
      "# chunk and layer are 0-based; saved_arena and grad_arena are the coloring's colors\n[\n";
  char line[160];
  for (const te_slot& t : tuples) {
    std::snprintf(line, sizeof(line), "    (%zu, %d, %d, %d, %d, %d, %zu),\n", t.saved_arena, t.io_slot, t.branch,
                  t.chunk, t.layer, t.warmup_group, t.grad_arena);
    text += line;
  }
  return text + "]\n";
}

}  // namespace graphpool::plan
