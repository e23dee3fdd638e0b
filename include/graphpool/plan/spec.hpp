#pragma once
/// @file spec.hpp
/// @brief Planner input written as text, as the `graphpool-plan` command line takes it:
/// sizes ("64MiB"), schedule specs ("pp=4,rank=0,microbatches=4..64:4,vpp=2,group=4"), branches
/// ("cp2:32MiB:8MiB") and per-frame overrides ("chunk=0,layer=1,branch=cp2,saved=40MiB").
///
/// Host-only: no CUDA header. Every parser throws graphpool::error with a one-line reason.

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/schedule.hpp"

namespace graphpool::plan {

namespace detail {

[[nodiscard]] inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

/// A whole-string integer in [minimum, maximum], or an error naming `what`.
[[nodiscard]] inline long long parse_integer(const std::string& text, const std::string& what, long long minimum,
                                             long long maximum) {
  char* end = nullptr;
  errno = 0;
  const long long value = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || (errno != 0 && errno != ERANGE)) {
    throw error(what + ": '" + text + "' is not an integer");
  }
  if (errno == ERANGE || value < minimum || value > maximum) {  // ERANGE: past long long, so past [minimum, maximum]
    throw error(what + ": " + text + " is outside [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
  }
  return value;
}

/// Splits "key=value,key=value" into pairs; an entry without '=' or a key given twice is an error naming `what`.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> parse_pairs(std::string_view text,
                                                                                  const std::string& what) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& item : split(text, ',')) {
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw error(what + ": '" + item + "' is not key=value");
    }
    std::string key = item.substr(0, equals);
    for (const auto& earlier : pairs) {
      // Last-wins would silently drop a value the user typed: "pp=4,pp=2" is a typo, not a choice.
      if (earlier.first == key) throw error(what + ": key '" + key + "' is given twice; give it once");
    }
    pairs.emplace_back(std::move(key), item.substr(equals + 1));
  }
  return pairs;
}

}  // namespace detail

/// @brief Parses a byte size: a number with an optional unit B, KiB, MiB or GiB ("64MiB", "1.5GiB", "4096").
/// @throws graphpool::error for anything else, a negative or fractional byte count, or an overflow.
[[nodiscard]] inline std::size_t parse_size(std::string_view text) {
  const std::string whole(text);
  std::size_t digits = 0;
  while (digits < whole.size() && (std::isdigit(static_cast<unsigned char>(whole[digits])) || whole[digits] == '.')) {
    ++digits;
  }
  const std::string number = whole.substr(0, digits);
  const std::string unit = whole.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "KiB") scale = 1024.0;
  if (unit == "MiB") scale = 1024.0 * 1024.0;
  if (unit == "GiB") scale = 1024.0 * 1024.0 * 1024.0;
  char* end = nullptr;
  const double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (scale == 0 || number.empty() || end != number.c_str() + number.size()) {
    throw error("size '" + whole + "' is not a number with an optional unit B, KiB, MiB or GiB (e.g. 64MiB)");
  }
  const double bytes = value * scale;
  if (bytes != std::floor(bytes)) throw error("size '" + whole + "' is not a whole number of bytes");
  if (bytes >= 9.0e15) throw error("size '" + whole + "' is too large");
  return static_cast<std::size_t>(bytes);
}

/// @brief Parses a size given to `what` (a flag and its value, for messages): as parse_size, and at most
/// max_frame_bytes (1 TiB), the most one frame, returned gradient or alignment may take.
/// @throws graphpool::error naming `what` for a malformed size or one above 1 TiB.
[[nodiscard]] inline std::size_t parse_frame_size(std::string_view text, const std::string& what) {
  std::size_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const error& e) {
    throw error(what + ": " + e.what());
  }
  if (bytes > max_frame_bytes) {
    throw error(what + ": " + std::string(text) + " is more than the 1 TiB (" + std::to_string(max_frame_bytes) +
                " bytes) one frame may hold");
  }
  return bytes;
}

/// @brief Parses "pp=P,rank=R,microbatches=M[,vpp=V,group=G]" into one schedule per microbatch count;
/// `microbatches` may be a range "4..64" (every count) or "4..64:4" (every 4th). With vpp > 1 the
/// schedule is interleaved (group defaults to pp); otherwise 1F1B. Messages call the text `name 'text'`
/// (the command line's flag by default; an API passes the name its callers know).
/// @throws graphpool::error naming the key or value at fault, a key given twice, and group without vpp > 1.
[[nodiscard]] inline std::vector<schedule> parse_schedule_spec(std::string_view text, std::string_view name = "--schedule") {
  const std::string what = std::string(name) + " '" + std::string(text) + "'";
  long long pp = 0;
  long long rank = -1;
  long long vpp = 1;
  long long group = 0;
  long long first = 0;
  long long last = 0;
  long long step = 1;
  bool have_vpp = false;
  bool have_group = false;
  for (const auto& [key, value] : detail::parse_pairs(text, what)) {
    if (key == "pp") {
      pp = detail::parse_integer(value, what + " pp", 1, 1024);
    } else if (key == "rank") {
      rank = detail::parse_integer(value, what + " rank", 0, 1023);
    } else if (key == "vpp") {
      vpp = detail::parse_integer(value, what + " vpp", 1, 64);
      have_vpp = true;
    } else if (key == "group") {
      group = detail::parse_integer(value, what + " group", 1, 4096);
      have_group = true;
    } else if (key == "microbatches") {
      const std::size_t dots = value.find("..");
      if (dots == std::string::npos) {
        first = last = detail::parse_integer(value, what + " microbatches", 1, 4096);
      } else {
        const std::string range_end = value.substr(dots + 2);
        const std::size_t colon = range_end.find(':');
        first = detail::parse_integer(value.substr(0, dots), what + " microbatches", 1, 4096);
        last = detail::parse_integer(range_end.substr(0, colon), what + " microbatches", 1, 4096);
        if (colon != std::string::npos) {
          step = detail::parse_integer(range_end.substr(colon + 1), what + " microbatches step", 1, 4096);
        }
        if (last < first) throw error(what + ": microbatches range " + value + " is empty");
      }
    } else {
      throw error(what + ": unknown key '" + key + "'; use pp, rank, microbatches, vpp, group");
    }
  }
  if (pp == 0 || rank < 0 || first == 0) throw error(what + ": pp, rank and microbatches are required");
  if (have_group && (!have_vpp || vpp == 1)) {
    throw error(what + ": group applies to interleaved schedules only; give vpp=V with V > 1, or drop group");
  }
  if (group == 0) group = pp;
  std::vector<schedule> schedules;
  try {
    for (long long m = first; m <= last; m += step) {
      const int p = static_cast<int>(pp);
      const int r = static_cast<int>(rank);
      const int count = static_cast<int>(m);
      schedules.push_back(vpp == 1 ? schedule::one_f_one_b(p, r, count)
                                   : schedule::interleaved(p, r, count, static_cast<int>(vpp), static_cast<int>(group)));
    }
  } catch (const error& e) {
    throw error(what + ": " + e.what());
  }
  return schedules;
}

/// @brief Parses an explicit order as `--order` takes it: "1,1,-1,2,-2,-1" (commas and/or spaces) of
/// Megatron-LM's signed 1-based chunk ids, stricter than schedule::parse_order: an empty entry (a
/// trailing or doubled comma) is an error naming it (a chunk below the largest id that never runs is
/// refused by the schedule itself, "2,-2": chunk 0 would get frames but never run). Messages name chunks 0-based with
/// their order id: "chunk 0 (order id 1)". Messages call the text `name 'text'`, as parse_schedule_spec's.
/// @throws graphpool::error naming the entry or the chunk, and as schedule::parse_order.
[[nodiscard]] inline schedule parse_order_spec(std::string_view text, std::string_view name = "--order") {
  const std::string what = std::string(name) + " '" + std::string(text) + "'";
  std::size_t entries = 0;
  const std::vector<std::string> pieces = detail::split(text, ',');
  if (pieces.size() == 1 && pieces[0].find_first_not_of(" \t") == std::string::npos) {
    throw error(what + ": the order is empty; give each chunk's forwards (+id) and backwards (-id), e.g. 1,-1");
  }
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const std::size_t first = pieces[i].find_first_not_of(" \t");
    if (first == std::string::npos) {
      const std::string where = i + 1 == pieces.size() ? "after the last entry (a trailing comma)"
                                : i == 0               ? "before the first entry (a leading comma)"
                                                       : "between two commas";
      throw error(what + ": entry " + std::to_string(entries) + " is empty, " + where + "; remove the comma");
    }
    // Entries inside one piece are separated by spaces: count them for the next message's index.
    bool in_entry = false;
    for (const char ch : pieces[i]) {
      const bool blank = ch == ' ' || ch == '\t';
      if (!blank && !in_entry) ++entries;
      in_entry = !blank;
    }
  }
  // The schedule is named `name text`, unquoted: the planner's messages quote schedule names. Its own
  // messages (an entry that is not a number, a chunk that never runs) call the text `name 'text'`.
  return schedule::parse_order(text, 0, std::string(name) + " " + std::string(text), what);
}

/// @brief Parses "NAME:SAVED[:GRAD]" (sizes as parse_frame_size takes them); NAME holds no ',' or '='
/// (--frame-bytes, "key=value,...", names branches) and, as the separator, no ':'.
[[nodiscard]] inline branch_sizes parse_branch_spec(std::string_view text) {
  const std::string what = "--branch '" + std::string(text) + "'";
  const std::vector<std::string> parts = detail::split(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) {
    throw error(what + ": write NAME:SAVED[:GRAD], e.g. cp2:32MiB:8MiB");
  }
  if (parts[0].find_first_of(",=") != std::string::npos) {
    throw error(what + ": the name '" + parts[0] + "' holds ',' or '=', so --frame-bytes could not name it; rename it");
  }
  branch_sizes branch;
  branch.name = parts[0];
  branch.saved_per_layer = parse_frame_size(parts[1], what + " saved bytes");
  if (parts.size() == 3) branch.grad_per_slot = parse_frame_size(parts[2], what + " gradient bytes");
  return branch;
}

/// @brief Parses "chunk=C,layer=L,branch=NAME,saved=SIZE" (0-based chunk and layer; SIZE as parse_frame_size).
[[nodiscard]] inline saved_bytes_override parse_frame_bytes_spec(std::string_view text) {
  const std::string what = "--frame-bytes '" + std::string(text) + "'";
  saved_bytes_override o;
  o.chunk = -1;
  o.layer = -1;
  bool have_saved = false;
  for (const auto& [key, value] : detail::parse_pairs(text, what)) {
    if (key == "chunk") {
      o.chunk = static_cast<int>(detail::parse_integer(value, what + " chunk", 0, 1 << 20));
    } else if (key == "layer") {
      o.layer = static_cast<int>(detail::parse_integer(value, what + " layer", 0, 1 << 20));
    } else if (key == "branch") {
      o.branch = value;
    } else if (key == "saved") {
      o.saved = parse_frame_size(value, what + " saved");
      have_saved = true;
    } else {
      throw error(what + ": unknown key '" + key + "'; use chunk, layer, branch, saved");
    }
  }
  if (o.chunk < 0 || o.layer < 0 || o.branch.empty() || !have_saved) {
    std::string missing;
    for (const auto& [name, given] : {std::pair<const char*, bool>{"chunk", o.chunk >= 0}, {"layer", o.layer >= 0},
                                      {"branch", !o.branch.empty()}, {"saved", have_saved}}) {
      if (!given) missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    throw error(what + ": chunk, layer, branch and saved are required; " + missing +
                (missing.find(',') == std::string::npos ? " is" : " are") + " missing or empty");
  }
  return o;
}

/// @brief Parses "L" (every chunk) or "L0,L1,..." (one per chunk).
[[nodiscard]] inline std::vector<int> parse_layers_spec(std::string_view text) {
  std::vector<int> layers;
  for (const std::string& item : detail::split(text, ',')) {
    layers.push_back(static_cast<int>(detail::parse_integer(item, "--layers '" + std::string(text) + "'", 0, 4096)));
  }
  return layers;
}

}  // namespace graphpool::plan
