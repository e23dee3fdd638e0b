#pragma once
// The PyTorch plug-in's state behind the C calls of graphpool/torch_allocator.h: the schedules, the
// slots they need, and the segment pool PyTorch's captures draw from. A template over the arena so
// the host tests run the bookkeeping with a stand-in (bindings/torch_allocator.cpp uses shared_window_arena).

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/capture/segment_pool.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/plan.hpp"

namespace graphpool::bindings {

/// @return the schedules `specs` name: "pp=P,rank=R,microbatches=M[,vpp=V,group=G]" or "order=1,1,-1,-1".
/// @throws graphpool::error naming the spec at fault, no spec, or schedules whose chunks differ.
[[nodiscard]] inline std::vector<plan::schedule> parse_schedules(const std::vector<std::string>& specs) {
  if (specs.empty()) throw error("no schedule given: give at least one, e.g. \"order=1,-1\" for one microbatch at a time");
  std::vector<plan::schedule> schedules;
  for (const std::string& spec : specs) {
    const std::string order_key = "order=";
    if (spec.compare(0, order_key.size(), order_key) == 0) {
      schedules.push_back(plan::parse_order_spec(spec.substr(order_key.size()), "schedule order"));
    } else {
      for (plan::schedule& s : plan::parse_schedule_spec(spec, "schedule")) schedules.push_back(std::move(s));
    }
    if (schedules.back().chunks() != schedules.front().chunks()) {
      throw error("schedule '" + spec + "' has " + std::to_string(schedules.back().chunks()) + " chunks but '" +
                  specs.front() + "' has " + std::to_string(schedules.front().chunks()) + "; every schedule must have the same chunks");
    }
  }
  return schedules;
}

/// @brief Throws naming the fault unless `branches` holds at least one name, none empty, none twice.
inline void check_branch_names(const std::vector<std::string>& branches) {
  if (branches.empty()) throw error("no branch given: give at least one variant name");
  for (std::size_t i = 0; i < branches.size(); ++i) {
    if (branches[i].empty()) throw error("branch " + std::to_string(i) + " has an empty name");
    for (std::size_t j = 0; j < i; ++j) {
      if (branches[j] == branches[i]) throw error("branch name '" + branches[i] + "' is given twice");
    }
  }
}

template <class Arena>
class torch_plugin {
 public:
  using pool_type = segment_pool<Arena>;

  /// @brief A plug-in on `device` for `branches` over `schedules` (parse_schedules reads them from text),
  /// with physical pages of `granularity` bytes.
  torch_plugin(int device, std::vector<std::string> branches, std::vector<plan::schedule> schedules,
               std::size_t window_capacity, std::size_t granularity, typename pool_type::arena_factory make_arena,
               typename pool_type::block_factory make_block)
      : device_(device), granularity_(granularity), schedules_(std::move(schedules)),
        shape_(shape_of(schedules_, branches)),
        pool_(std::move(make_arena), std::move(make_block), shape_.chunks, shape_.slots, std::move(branches), window_capacity,
              granularity) {}

  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] pool_type& pool() noexcept { return pool_; }
  [[nodiscard]] const pool_type& pool() const noexcept { return pool_; }

  /// @return the slot microbatch `microbatch` of `chunk` replays in the schedule of `microbatches`.
  /// @throws graphpool::error for a count that was not planned, or a chunk or microbatch out of range.
  [[nodiscard]] int slot_of(int microbatches, int chunk, int microbatch) const {
    const plan::slot_map& map = plan::find_slot_map(shape_, microbatches);
    if (chunk < 0 || chunk >= shape_.chunks) {
      throw error("chunk " + std::to_string(chunk) + " is out of range; the schedules have " + std::to_string(shape_.chunks) +
                  " chunk(s) (0-based)");
    }
    if (microbatch < 0 || microbatch >= microbatches) {
      throw error("microbatch " + std::to_string(microbatch) + " is out of range for a schedule of " +
                  std::to_string(microbatches) + " microbatch(es) (0-based)");
    }
    return map.slots[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(microbatch)];
  }

  /// @return the microbatches of the first schedule given (the one a step replays unless told otherwise).
  [[nodiscard]] int first_microbatches() const { return shape_.slot_maps.front().microbatches; }

  /// @brief What the frames take. Before lay_out(): each (chunk, slot) frame holds every page its
  /// largest branch used. After: the frames' persistent pages as planned, plus the shared scratch.
  struct footprint {
    std::size_t planned = 0;     ///< the plan's bytes (with the scratch after lay_out())
    std::size_t live_bound = 0;  ///< no plan of these frames over the schedules is smaller (scratch included)
    std::size_t scratch = 0;     ///< the shared scratch block (0 before lay_out())
  };

  /// @return the plan of the frames as they are now (see footprint).
  [[nodiscard]] footprint current_footprint() const {
    const bool laid_out = pool_.laid_out();
    const plan::plan planned = plan_frames(laid_out);
    const std::size_t scratch = pool_.scratch_bytes();
    return {planned.saved.footprint_bytes + scratch, planned.saved.live_bound_bytes + scratch, scratch};
  }

  /// @brief Plans the frames' persistent pages over the schedules and maps every window by it (see
  /// segment_pool::lay_out). @return the footprint after.
  footprint lay_out() {
    const plan::plan planned = plan_frames(true);
    std::vector<std::pair<std::size_t, std::size_t>> ranges(static_cast<std::size_t>(shape_.chunks * shape_.slots), {0, 0});
    std::vector<std::size_t> offsets(ranges.size(), 0);
    for (const plan::planned_frame& f : planned.frames) {
      const auto i = static_cast<std::size_t>(f.chunk * shape_.slots + f.slot);
      ranges[i] = {f.offset, f.bytes};
      offsets[i] = f.offset;
    }
    pool_.lay_out(offsets, planned.saved.footprint_bytes);
    frame_ranges_ = std::move(ranges);
    return current_footprint();
  }

  /// @return the (offset, bytes) of the (chunk, slot) frame's persistent pages in the planned block:
  /// frames whose ranges overlap share memory, so they must never be alive together.
  /// @throws graphpool::error before lay_out(), or for a chunk or slot out of range.
  [[nodiscard]] std::pair<std::size_t, std::size_t> frame_range(int chunk, int slot) const {
    if (frame_ranges_.empty()) {
      throw error("the frames are not laid out yet; lay them out after the captures (graphpool_torch_lay_out)");
    }
    if (chunk < 0 || chunk >= shape_.chunks || slot < 0 || slot >= shape_.slots) {
      throw error("chunk " + std::to_string(chunk) + ", slot " + std::to_string(slot) + " is out of range; there are " +
                  std::to_string(shape_.chunks) + " chunk(s) of " + std::to_string(shape_.slots) + " slot(s) (0-based)");
    }
    return frame_ranges_[static_cast<std::size_t>(chunk * shape_.slots + slot)];
  }

 private:
  // The slots and slot maps depend on the schedules alone: plan them with one byte per frame.
  static plan::plan shape_of(const std::vector<plan::schedule>& schedules, const std::vector<std::string>& branches) {
    check_branch_names(branches);
    plan::problem p;
    p.schedules = schedules;
    p.layers_per_chunk = {1};
    for (const std::string& name : branches) p.branches.push_back({name, 1, 0});
    return plan::make_plan(p, plan::assignment::offsets);
  }

  // Frames of one page per layer and branch: the persistent pages (or, before lay_out, every used page)
  // of each branch's window, the largest over the chunk's slots (every slot captures the same graphs).
  [[nodiscard]] plan::plan plan_frames(bool persistent_only) const {
    plan::problem p;
    p.schedules = schedules_;
    p.layers_per_chunk = {1};
    p.alignment = granularity_;
    for (std::uint32_t b = 0; b < pool_.branches().size(); ++b) {
      const auto bytes = [&](std::uint32_t c) {
        std::size_t most = 0;
        for (std::uint32_t s = 0; s < static_cast<std::uint32_t>(shape_.slots); ++s) {
          const segment_source source{chunk_id{c}, slot_id{s}, branch_id{b}};
          most = std::max(most, persistent_only ? pool_.persistent_pages(source) * granularity_
                                                : align_up(pool_.used_bytes(source), granularity_));
        }
        return most;
      };
      p.branches.push_back({pool_.branches()[b], bytes(0), 0});
      for (std::uint32_t c = 1; c < static_cast<std::uint32_t>(shape_.chunks); ++c) {
        p.overrides.push_back({static_cast<int>(c), 0, pool_.branches()[b], bytes(c)});
      }
    }
    return plan::make_plan(p, plan::assignment::offsets);
  }

  int device_;
  std::size_t granularity_;
  std::vector<plan::schedule> schedules_;
  plan::plan shape_;
  pool_type pool_;
  std::vector<std::pair<std::size_t, std::size_t>> frame_ranges_;  // after lay_out(): per frame, chunk-major
};

}  // namespace graphpool::bindings
