#pragma once
/// @file branch_view.hpp
/// @brief The addresses of one branch of a slot after reserve(), and a cursor that hands its parts out
/// one request at a time.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/layout.hpp"

namespace graphpool {

namespace detail {

/// @brief A branch as placed in its slot's arena: offsets are from the start of the arena.
struct placed_branch {
  std::string name;
  branch_layout layout;
  std::vector<std::size_t> part_offsets;                  // outputs, then saved
  std::vector<std::size_t> part_extents;                  // bytes each part spans, same order
  std::vector<std::vector<std::size_t>> storage_offsets;  // per part, per storage
  std::size_t extent = 0;
};

/// @brief Places a branch's outputs then saved parts from offset 0, each at its alignment.
inline placed_branch place_branch(const std::string& where, std::string name, branch_layout layout) {
  placed_branch placed;
  std::size_t offset = 0;
  auto place_parts = [&](const std::vector<part>& parts, const char* kind) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string what = where + " " + kind + " part " + std::to_string(i);
      std::vector<std::size_t> inside = parts[i].placement(what);
      offset = detail::checked_align_up(offset, parts[i].alignment(), what);
      placed.part_offsets.push_back(offset);
      const std::size_t extent = inside.back();
      placed.part_extents.push_back(extent);
      inside.pop_back();
      for (std::size_t& o : inside) o += offset;
      placed.storage_offsets.push_back(std::move(inside));
      offset = detail::checked_add(offset, extent, what);
    }
  };
  place_parts(layout.outputs, "output");
  place_parts(layout.saved, "saved");
  placed.name = std::move(name);
  placed.layout = std::move(layout);
  placed.extent = offset;
  return placed;
}

/// @brief Refuses a branch `name` of slot `slot` whose outputs differ from the slot's `first` branch's
/// (branches of a slot share output storage), naming both branches and the first differing part.
inline void check_same_outputs(const std::string& slot, const placed_branch& first, const std::string& name,
                               const branch_layout& layout) {
  const std::vector<part>& expected = first.layout.outputs;
  const std::size_t common = std::min(expected.size(), layout.outputs.size());
  const std::string both = "slot '" + slot + "': branch '" + name + "' and branch '" + first.name + "'";
  const std::string fix = "; branches of a slot share output storage and must declare identical outputs";
  for (std::size_t i = 0; i < common; ++i) {
    if (layout.outputs[i] != expected[i]) {
      throw error(both + " differ at output part " + std::to_string(i) + ": " + layout.outputs[i].describe() + " vs " +
                  expected[i].describe() + fix);
    }
  }
  if (layout.outputs.size() != expected.size()) {
    throw error(both + " differ at output part " + std::to_string(common) + ": branch '" + name + "' declares " +
                std::to_string(layout.outputs.size()) + " output part(s), branch '" + first.name + "' " +
                std::to_string(expected.size()) + fix);
  }
}

[[nodiscard]] inline std::size_t alignment_of(const branch_layout& layout) {
  std::size_t result = 1;
  for (const part& p : layout.outputs) result = std::max(result, p.alignment());
  for (const part& p : layout.saved) result = std::max(result, p.alignment());
  return result;
}

}  // namespace detail

/// @brief The addresses of one (slot, branch) after reserve(): a cheap, copyable handle.
///
/// Valid while its arena_allocator stays reserved; reading it is lock-free and thread-safe.
class branch_view {
 public:
  /// @return the address of output part `index` (identical layout in every branch of the slot): its first
  /// storage, output_storage(index, 0); nullptr where that storage has zero bytes, as for every zero-byte
  /// request in graphpool (a grouped part's other storages: output_storage()).
  /// @throws graphpool::error when the branch declared fewer output parts.
  [[nodiscard]] void* output(std::size_t index) const { return address(index, 0, true); }

  /// @return the address of the branch's own saved part `index`: its first storage, as output() gives.
  /// @throws graphpool::error when the branch declared fewer saved parts.
  [[nodiscard]] void* saved(std::size_t index) const { return address(index, 0, false); }

  /// @return the address of storage `storage` of output part `index` (for grouped parts).
  [[nodiscard]] void* output_storage(std::size_t index, std::size_t storage) const {
    return address(index, storage, true);
  }

  /// @return the address of storage `storage` of saved part `index` (for grouped parts).
  [[nodiscard]] void* saved_storage(std::size_t index, std::size_t storage) const {
    return address(index, storage, false);
  }

  /// @return the start of the branch's memory (its first part, or its window of the arena).
  [[nodiscard]] void* base() const noexcept { return base_; }
  /// @return the bytes the branch uses from base(): its parts, each aligned.
  [[nodiscard]] std::size_t bytes() const noexcept { return branch_->extent; }
  [[nodiscard]] std::size_t output_count() const noexcept { return branch_->layout.outputs.size(); }
  [[nodiscard]] std::size_t saved_count() const noexcept { return branch_->layout.saved.size(); }
  /// @return "slot 'NAME' branch 'NAME'", for messages.
  [[nodiscard]] std::string describe() const {
    return "slot '" + *slot_name_ + "' branch '" + branch_->name + "'";
  }

 private:
  template <class Upstream>
  friend class arena_allocator;
  friend class branch_cursor;

  branch_view(const detail::placed_branch* branch, std::byte* base, const std::string* slot_name) noexcept
      : branch_(branch), base_(base), slot_name_(slot_name) {}

  [[nodiscard]] void* address(std::size_t index, std::size_t storage, bool output) const {
    const std::size_t count = output ? output_count() : saved_count();
    const char* kind = output ? "output" : "saved";
    if (index >= count) {
      throw error(describe() + " declared " + std::to_string(count) + " " + kind + " part(s); " + kind + " part " +
                  std::to_string(index) + " is beyond what was declared");
    }
    const std::size_t flat = output ? index : output_count() + index;
    const std::vector<std::size_t>& offsets = branch_->storage_offsets[flat];
    if (storage >= offsets.size()) {
      throw error(describe() + " " + kind + " part " + std::to_string(index) + " has " +
                  std::to_string(offsets.size()) + " storage(s); storage " + std::to_string(storage) +
                  " is beyond what was declared");
    }
    // A zero-byte storage has no memory: nullptr, as for every zero-byte request in graphpool.
    const part& declared = output ? branch_->layout.outputs[index] : branch_->layout.saved[index];
    if (declared.storages()[storage].bytes == 0) return nullptr;
    return base_ + offsets[storage];
  }

  const detail::placed_branch* branch_;
  std::byte* base_;  // the arena's window for this branch; part offsets are from it
  const std::string* slot_name_;
};

/// @brief Hands out one branch's declared parts in order, checking each request against its declaration.
///
/// For code that learns its requests one by one (a framework allocator during capture): the k-th
/// output request gets output part k, the k-th saved request saved part k, and each must fit its
/// part (a declared part of zero bytes is passed over). allocate() takes the next part in declaration
/// order (outputs, then saved). Not thread-safe:
/// one cursor per caller.
class branch_cursor {
 public:
  explicit branch_cursor(branch_view view) noexcept : view_(view) {}

  /// @brief The next declared part (outputs first, then saved parts). A zero-byte request returns
  /// nullptr and takes no part (graphpool's one rule for zero-byte requests), so a declared part of zero
  /// bytes, which no request could take, is passed over.
  /// @throws graphpool::error when every declared part was handed out, or the request is larger or
  /// more strictly aligned than the part declared for it. Nothing is handed out then.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (bytes != 0) pass_empty(true, next_output_);
    return next_output_ < view_.output_count() ? allocate_output(bytes, alignment) : allocate_saved(bytes, alignment);
  }

  /// @brief The next declared output part. @throws graphpool::error as allocate().
  [[nodiscard]] void* allocate_output(std::size_t bytes, std::size_t alignment = default_alignment) {
    return take(true, next_output_, bytes, alignment);
  }

  /// @brief The next declared saved part. @throws graphpool::error as allocate().
  [[nodiscard]] void* allocate_saved(std::size_t bytes, std::size_t alignment = default_alignment) {
    return take(false, next_saved_, bytes, alignment);
  }

  /// @return how many requests were served (a part each).
  [[nodiscard]] std::size_t served() const noexcept { return served_; }

 private:
  // Moves `next` past declared parts of zero bytes; @return the flat index of this kind's part 0.
  std::size_t pass_empty(bool output, std::size_t& next) const noexcept {
    const std::size_t count = output ? view_.output_count() : view_.saved_count();
    const std::size_t first = output ? 0 : view_.output_count();
    while (next < count && view_.branch_->part_extents[first + next] == 0) ++next;
    return first;
  }

  void* take(bool output, std::size_t& next, std::size_t bytes, std::size_t alignment) {
    if (bytes == 0) return nullptr;
    const char* kind = output ? "output" : "saved";
    const std::size_t count = output ? view_.output_count() : view_.saved_count();
    const std::size_t first = pass_empty(output, next);
    if (!is_valid_alignment(alignment)) {
      detail::check_alignment(alignment, view_.describe() + " " + describe_request(kind, next, bytes, alignment));
    }
    if (next >= count) {
      throw error(view_.describe() + ": " + describe_request(kind, next, bytes, alignment) +
                  " is beyond what was declared: the branch declared " + std::to_string(count) + " " + kind +
                  " part(s); declare this part in the branch's layout");
    }
    const std::size_t flat = first + next;
    const part& declared = output ? view_.branch_->layout.outputs[next] : view_.branch_->layout.saved[next];
    if (bytes > view_.branch_->part_extents[flat] || alignment > declared.alignment()) {
      throw error(view_.describe() + ": " + describe_request(kind, next, bytes, alignment) + " does not fit " + kind +
                  " part " + std::to_string(next) + " declared as " + declared.describe() +
                  "; declare the part at least this large and this aligned");
    }
    ++next;
    ++served_;
    return view_.base_ + view_.branch_->part_offsets[flat];
  }

  [[nodiscard]] static std::string describe_request(const char* kind, std::size_t index, std::size_t bytes,
                                                    std::size_t alignment) {
    return std::string(kind) + " request " + std::to_string(index) + " (" + std::to_string(bytes) + " B @" +
           std::to_string(alignment) + ")";
  }

  branch_view view_;
  std::size_t next_output_ = 0;
  std::size_t next_saved_ = 0;
  std::size_t served_ = 0;
};

}  // namespace graphpool
