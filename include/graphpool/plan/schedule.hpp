#pragma once
/// @file schedule.hpp
/// @brief Pipeline schedules of one rank: the order of forward and backward events per model chunk.
///
/// Conventions are Megatron-LM's, as TransformerEngine's `_order` uses them: an order is a list of
/// 1-based chunk ids, `+c` the forward of chunk c's next microbatch, `-c` the backward of chunk c's
/// oldest pending microbatch (FIFO per chunk). Host-only: no CUDA header.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "graphpool/error.hpp"

namespace graphpool::plan {

/// @brief Whether an event runs a forward or a backward.
enum class phase { forward, backward };

/// @brief One entry of a schedule: the forward or backward of one microbatch of one chunk (0-based).
struct event {
  phase kind = phase::forward;
  int chunk = 0;
  int microbatch = 0;  ///< per chunk, in order of the chunk's forwards

  [[nodiscard]] friend bool operator==(const event& a, const event& b) noexcept {
    return a.kind == b.kind && a.chunk == b.chunk && a.microbatch == b.microbatch;
  }
};

/// @brief A validated order of events for one pipeline rank.
///
/// Every forward has a later backward of the same chunk, backwards run FIFO per chunk, and every
/// chunk has as many backwards as forwards. Immutable once built; safe to share between threads.
class schedule {
 public:
  /// @brief The most model chunks a schedule may have.
  static constexpr int max_chunks = 4096;
  /// @brief The most microbatches, pipeline stages and group size a generated schedule may have (so that
  /// its counts stay far from overflow).
  static constexpr int max_count = 65536;

  /// @brief Non-interleaved 1F1B for `rank` of `pipeline` stages over `microbatches`:
  /// W = min(P-r-1, M) warm-up forwards, (F, B) pairs, then W backwards.
  /// @throws graphpool::error for P < 1, a rank outside [0, P) or M < 1.
  [[nodiscard]] static schedule one_f_one_b(int pipeline, int rank, int microbatches) {
    check_shape(pipeline, rank, microbatches, 1, 1);
    const int warmup = std::min(pipeline - rank - 1, microbatches);
    std::vector<int> order;
    order.insert(order.end(), static_cast<std::size_t>(warmup), 1);
    for (int i = 0; i < microbatches - warmup; ++i) {
      order.push_back(1);
      order.push_back(-1);
    }
    order.insert(order.end(), static_cast<std::size_t>(warmup), -1);
    return from_order(order, 1,
                      "1f1b pp=" + std::to_string(pipeline) + " rank=" + std::to_string(rank) +
                          " microbatches=" + std::to_string(microbatches));
  }

  /// @brief Interleaved (virtual pipeline) schedule with `chunks` model chunks per rank and
  /// microbatch group size `group`, by Megatron-LM's table: for each group of G microbatches, every
  /// chunk in turn runs the group's microbatches; W = min(2(P-r-1) + (V-1)G, M·V) warm-up forwards,
  /// then (F, B) pairs, then the remaining backwards; backward k runs chunk V-1-table[k].chunk.
  /// A last group shorter than G (M not a multiple of G, or M < G) is run as it is.
  /// @throws graphpool::error for P < 1, a rank outside [0, P), M < 1, V < 1 or G < P.
  [[nodiscard]] static schedule interleaved(int pipeline, int rank, int microbatches, int chunks, int group) {
    check_shape(pipeline, rank, microbatches, chunks, group);
    if (group < pipeline) {
      throw error("interleaved schedule: group size " + std::to_string(group) + " is smaller than the pipeline size " +
                  std::to_string(pipeline) + "; Megatron-LM needs group >= pp");
    }
    std::vector<int> table;  // chunk of the k-th virtual microbatch
    for (int start = 0; start < microbatches; start += group) {
      for (int c = 0; c < chunks; ++c) {
        for (int mb = start; mb < std::min(start + group, microbatches); ++mb) table.push_back(c);
      }
    }
    const int total = microbatches * chunks;
    const int warmup = std::min(2 * (pipeline - rank - 1) + (chunks - 1) * group, total);
    std::vector<int> order;
    auto forward = [&](int k) { order.push_back(table[static_cast<std::size_t>(k)] + 1); };
    auto backward = [&](int k) { order.push_back(-(chunks - table[static_cast<std::size_t>(k)])); };
    for (int k = 0; k < warmup; ++k) forward(k);
    for (int i = 0; i < total - warmup; ++i) {
      forward(warmup + i);
      backward(i);
    }
    for (int k = total - warmup; k < total; ++k) backward(k);
    return from_order(order, chunks,
                      "interleaved pp=" + std::to_string(pipeline) + " rank=" + std::to_string(rank) +
                          " microbatches=" + std::to_string(microbatches) + " vpp=" + std::to_string(chunks) +
                          " group=" + std::to_string(group));
  }

  /// @brief A schedule from an order of signed 1-based chunk ids.
  /// @param chunks the number of model chunks; 0 takes the largest id in the order.
  /// Chunks may run different numbers of microbatches (the schedule's count is the most any runs), but
  /// every chunk runs at least one: one that never runs would get frames and copies for nothing.
  /// @throws graphpool::error naming the entry's index and value for a zero or out-of-range id or a
  /// backward with no pending forward, and naming the chunk when its forwards and backwards differ in
  /// number or it never runs ("2,-2": chunk 0 (order id 1) never runs).
  [[nodiscard]] static schedule from_order(const std::vector<int>& order, int chunks = 0, std::string name = "order") {
    std::vector<double> entries(order.begin(), order.end());
    return from_entries(entries, chunks, std::move(name));
  }

  /// @brief A schedule from TransformerEngine's order entries, which may hold fractional values.
  ///
  /// A fractional entry such as `-(c)-0.5` is a delayed weight-gradient graph: its memory outlives
  /// the backward that a slot's lifetime ends at, so it is rejected with shared slots.
  /// @throws graphpool::error as from_order, and for any non-integer entry.
  /// @param said how messages name the schedule (default: `name`), e.g. a command line's quoted flag.
  [[nodiscard]] static schedule from_entries(const std::vector<double>& entries, int chunks = 0,
                                             std::string name = "order", std::string said = {}) {
    if (said.empty()) said = name;
    if (entries.empty()) throw error(said + ": the order is empty");
    int largest = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const double value = entries[i];
      if (!std::isfinite(value)) {
        throw error(said + ": entry " + std::to_string(i) + " (" + format_entry(value) +
                    ") is not a chunk id; write chunk ids like 1,-1,2");
      }
      if (value != std::trunc(value)) {
        throw error(said + ": entry " + std::to_string(i) + " (" + format_entry(value) +
                    ") is fractional: delayed weight-gradient graphs are not supported with shared slots; "
                    "remove them from the order");
      }
      if (value == 0) throw error(said + ": entry " + std::to_string(i) + " (0) is not a chunk id; ids start at 1");
      if (std::fabs(value) > max_chunks) {
        throw error(said + ": entry " + std::to_string(i) + " (" + format_entry(value) + ") names a chunk beyond " +
                    std::to_string(max_chunks) + ", the most a schedule may have");
      }
      largest = std::max(largest, static_cast<int>(std::fabs(value)));
    }
    if (chunks == 0) chunks = largest;
    if (chunks < 1 || chunks > max_chunks) {
      throw error(said + ": the number of chunks must be in [1, " + std::to_string(max_chunks) + "], not " +
                  std::to_string(chunks));
    }

    schedule result;
    result.name_ = std::move(name);
    result.chunks_ = chunks;
    std::vector<int> forwards(static_cast<std::size_t>(chunks), 0);
    std::vector<int> backwards(static_cast<std::size_t>(chunks), 0);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const int id = static_cast<int>(entries[i]);
      const int chunk = std::abs(id) - 1;
      if (chunk >= chunks) {
        throw error(said + ": entry " + std::to_string(i) + " (" + std::to_string(id) + ") names " +
                    chunk_name(chunk) + " but the schedule has " + std::to_string(chunks) + " chunk(s)");
      }
      auto& done_forwards = forwards[static_cast<std::size_t>(chunk)];
      auto& done_backwards = backwards[static_cast<std::size_t>(chunk)];
      if (id > 0) {
        result.events_.push_back(event{phase::forward, chunk, done_forwards++});
      } else {
        if (done_backwards >= done_forwards) {
          throw error(said + ": entry " + std::to_string(i) + " (" + std::to_string(id) +
                      ") is a backward of " + chunk_name(chunk) + " with no pending forward");
        }
        result.events_.push_back(event{phase::backward, chunk, done_backwards++});
      }
    }
    for (int c = 0; c < chunks; ++c) {
      if (forwards[static_cast<std::size_t>(c)] == 0) {
        throw error(said + ": " + chunk_name(c) + " never runs, yet " +
                    (largest == chunks ? "the largest id is " + std::to_string(largest)
                                       : "the schedule has " + std::to_string(chunks) + " chunks") +
                    "; number the chunks from 1 without gaps");
      }
      if (forwards[static_cast<std::size_t>(c)] != backwards[static_cast<std::size_t>(c)]) {
        throw error(said + ": " + chunk_name(c) + " has " +
                    std::to_string(forwards[static_cast<std::size_t>(c)]) + " forward(s) but " +
                    std::to_string(backwards[static_cast<std::size_t>(c)]) +
                    " backward(s); every forward needs its backward");
      }
    }
    result.microbatches_ = 0;
    for (int f : forwards) result.microbatches_ = std::max(result.microbatches_, f);
    return result;
  }

  /// @brief Parses "1,1,-1,2,-2,-1" (entries separated by commas, spaces or tabs) into a schedule.
  ///
  /// An entry is a decimal integer with an optional sign, `+c` or `c` a forward, `-c` a backward. A
  /// decimal fraction ("-1.5") is read as TransformerEngine's delayed weight-gradient entry, which
  /// from_entries refuses by name; any other text ("0x1", "1e0", "1.0", "inf") is no chunk id.
  /// @param said how messages name the schedule (default: `name`), as from_entries's.
  /// @throws graphpool::error naming the entry's index and text when it is not a decimal integer, and as
  /// from_entries.
  [[nodiscard]] static schedule parse_order(std::string_view text, int chunks = 0, std::string name = "order",
                                            std::string said = {}) {
    if (said.empty()) said = name;
    std::vector<double> entries;
    std::size_t position = 0;
    while (position < text.size()) {
      while (position < text.size() && (text[position] == ',' || text[position] == ' ' || text[position] == '\t')) {
        ++position;
      }
      if (position >= text.size()) break;
      std::size_t end = position;
      while (end < text.size() && text[end] != ',' && text[end] != ' ' && text[end] != '\t') ++end;
      const std::string token(text.substr(position, end - position));
      if (!is_order_entry(token)) {
        throw error(said + ": entry " + std::to_string(entries.size()) + " ('" + token +
                    "') is not a decimal integer; write chunk ids like 1,-1,2");
      }
      entries.push_back(std::strtod(token.c_str(), nullptr));
      position = end;
    }
    return from_entries(entries, chunks, std::move(name), std::move(said));
  }

  /// @return a name for messages: how the schedule was made.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// @return the number of model chunks (virtual pipeline stages) on this rank.
  [[nodiscard]] int chunks() const noexcept { return chunks_; }
  /// @return the largest number of microbatches any chunk runs.
  [[nodiscard]] int microbatches() const noexcept { return microbatches_; }
  /// @return the events in order.
  [[nodiscard]] const std::vector<event>& events() const noexcept { return events_; }

  /// @return the order as signed 1-based chunk ids.
  [[nodiscard]] std::vector<int> order() const {
    std::vector<int> ids;
    ids.reserve(events_.size());
    for (const event& e : events_) ids.push_back(e.kind == phase::forward ? e.chunk + 1 : -(e.chunk + 1));
    return ids;
  }

 private:
  schedule() = default;

  static void check_shape(int pipeline, int rank, int microbatches, int chunks, int group) {
    const std::string most = std::to_string(max_count);
    if (pipeline < 1 || pipeline > max_count) {
      throw error("schedule: pipeline size " + std::to_string(pipeline) + " must be in [1, " + most + "]");
    }
    if (rank < 0 || rank >= pipeline) {
      throw error("schedule: rank " + std::to_string(rank) + " is outside [0, " + std::to_string(pipeline) + ")");
    }
    if (microbatches < 1 || microbatches > max_count) {
      throw error("schedule: microbatches " + std::to_string(microbatches) + " must be in [1, " + most + "]");
    }
    if (chunks < 1 || chunks > max_chunks) {
      throw error("schedule: vpp " + std::to_string(chunks) + " must be in [1, " + std::to_string(max_chunks) + "]");
    }
    if (group < 1 || group > max_count) {
      throw error("schedule: group size " + std::to_string(group) + " must be in [1, " + most + "]");
    }
  }

  /// Chunks are 0-based everywhere (events, plans, JSON, messages); an order names them by 1-based id.
  [[nodiscard]] static std::string chunk_name(int chunk) {
    return "chunk " + std::to_string(chunk) + " (order id " + std::to_string(chunk + 1) + ")";
  }

  /// Whether parse_order reads `token`: an optional sign, decimal digits, and optionally '.' and digits not
  /// all zero (a fractional entry, for from_entries to name). strtod alone would also take hex, exponents,
  /// inf and nan.
  [[nodiscard]] static bool is_order_entry(const std::string& token) {
    const auto digits_from = [&token](std::size_t at) {
      while (at < token.size() && token[at] >= '0' && token[at] <= '9') ++at;
      return at;
    };
    const std::size_t sign = !token.empty() && (token[0] == '+' || token[0] == '-') ? 1 : 0;
    const std::size_t whole = digits_from(sign);
    if (whole == sign) return false;
    if (whole == token.size()) return true;
    if (token[whole] != '.') return false;
    const std::size_t fraction = digits_from(whole + 1);
    return fraction == token.size() && token.find_first_not_of('0', whole + 1) < fraction;
  }

  [[nodiscard]] static std::string format_entry(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", value);
    return text;
  }

  std::string name_;
  int chunks_ = 1;
  int microbatches_ = 0;
  std::vector<event> events_;
};

}  // namespace graphpool::plan
