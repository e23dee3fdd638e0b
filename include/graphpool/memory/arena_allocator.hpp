#pragma once
/// @file arena_allocator.hpp
/// @brief Arenas for slots of mutually exclusive branches: each arena is sized by its largest branch.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/memory/layout.hpp"

namespace graphpool {

/// @brief Names a slot of one arena_allocator (returned by declare_slot).
struct slot_id {
  std::uint32_t index = 0;
  [[nodiscard]] friend bool operator==(slot_id a, slot_id b) noexcept { return a.index == b.index; }
  [[nodiscard]] friend bool operator!=(slot_id a, slot_id b) noexcept { return a.index != b.index; }
};

/// @brief Names a branch within its slot (returned by declare_branch; the first branch of a slot is 0).
struct branch_id {
  std::uint32_t index = 0;
  [[nodiscard]] friend bool operator==(branch_id a, branch_id b) noexcept { return a.index == b.index; }
  [[nodiscard]] friend bool operator!=(branch_id a, branch_id b) noexcept { return a.index != b.index; }
};

/// @brief Names an arena of one arena_allocator (returned by declare_arena).
struct arena_id {
  std::uint32_t index = 0;
  [[nodiscard]] friend bool operator==(arena_id a, arena_id b) noexcept { return a.index == b.index; }
  [[nodiscard]] friend bool operator!=(arena_id a, arena_id b) noexcept { return a.index != b.index; }
};

/// @brief Figures of one arena.
struct arena_statistics {
  std::string name;
  std::size_t bytes = 0;       ///< the arena's size: its largest branch, over every slot it holds
  std::size_t alignment = 1;   ///< the strictest alignment of any part placed in it
  std::size_t slots = 0;       ///< slots that share it
  std::size_t windows = 0;     ///< address windows: the most branches of any of its slots
  std::string largest_slot;    ///< the slot whose branch sets the size
  std::string largest_branch;  ///< that branch
};

/// @brief Figures of a whole arena_allocator.
struct arena_allocator_statistics {
  bool reserved = false;                  ///< true once reserve() has taken the arenas
  std::size_t reserved_bytes = 0;         ///< sum of arena sizes: what reserve() takes from the upstream
  std::size_t per_branch_pool_bytes = 0;  ///< what a pool per branch needs: every branch of every slot, summed
  std::vector<arena_statistics> arenas;

  /// @return a printable table: one line per arena, then the totals and the saving.
  [[nodiscard]] std::string summary() const {
    std::string text = "arena                 bytes        slots  windows  largest (slot / branch)\n";
    for (const arena_statistics& a : arenas) {
      char line[256];
      std::snprintf(line, sizeof(line), "%-20s  %-11s  %5zu  %7zu  %s / %s\n", a.name.c_str(),
                    detail::format_bytes(a.bytes).c_str(), a.slots, a.windows, a.largest_slot.c_str(),
                    a.largest_branch.c_str());
      text += line;
    }
    text += std::string(reserved ? "reserved: " : "to reserve: ") + detail::format_bytes(reserved_bytes) +
            "; a pool per branch: " + detail::format_bytes(per_branch_pool_bytes);
    if (reserved_bytes > 0) {
      char ratio[64];
      std::snprintf(ratio, sizeof(ratio), " (%.2fx)", static_cast<double>(per_branch_pool_bytes) /
                                                         static_cast<double>(reserved_bytes));
      text += ratio;
    }
    return text + "\n";
  }
};

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

struct slot_record {
  std::string name;
  std::uint32_t arena = 0;
  std::vector<placed_branch> branches;
};

struct arena_record {
  std::string name;
  std::vector<std::uint32_t> slots;
  std::vector<void*> windows;  // one base address per branch index; empty until reserve()
  std::size_t bytes = 0;
  std::size_t alignment = 1;
};

/// @brief True when `Upstream` maps one physical arena at several addresses (one window per branch).
template <class Upstream, class = void>
struct has_windows : std::false_type {};
template <class Upstream>
struct has_windows<Upstream, std::void_t<decltype(std::declval<std::vector<void*>&>() =
                                                      std::declval<Upstream&>().allocate_windows(
                                                          std::size_t{}, std::size_t{}, std::size_t{}))>>
    : std::true_type {};

}  // namespace detail

/// @brief The addresses of one (slot, branch) after reserve(): a cheap, copyable handle.
///
/// Valid while its arena_allocator stays reserved; reading it is lock-free and thread-safe.
class branch_view {
 public:
  /// @return the address of output part `index` (identical layout in every branch of the slot).
  /// @throws graphpool::error when the branch declared fewer output parts.
  [[nodiscard]] void* output(std::size_t index) const { return address(index, 0, true); }

  /// @return the address of the branch's own saved part `index`.
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
/// part. allocate() takes the next part in declaration order (outputs, then saved). Not thread-safe:
/// one cursor per caller.
class branch_cursor {
 public:
  explicit branch_cursor(branch_view view) noexcept : view_(view) {}

  /// @brief The next declared part (outputs first, then saved parts).
  /// @throws graphpool::error when every declared part was handed out, or the request is larger or
  /// more strictly aligned than the part declared for it. Nothing is handed out then.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
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

  /// @return how many requests were served.
  [[nodiscard]] std::size_t served() const noexcept { return next_output_ + next_saved_; }

 private:
  void* take(bool output, std::size_t& next, std::size_t bytes, std::size_t alignment) {
    const char* kind = output ? "output" : "saved";
    const std::size_t count = output ? view_.output_count() : view_.saved_count();
    if (!is_valid_alignment(alignment)) {
      detail::check_alignment(alignment, view_.describe() + " " + describe_request(kind, next, bytes, alignment));
    }
    if (next >= count) {
      throw error(view_.describe() + ": " + describe_request(kind, next, bytes, alignment) +
                  " is beyond what was declared: the branch declared " + std::to_string(count) + " " + kind +
                  " part(s); declare this part in the branch's layout");
    }
    const std::size_t flat = output ? next : view_.output_count() + next;
    const part& declared = output ? view_.branch_->layout.outputs[next] : view_.branch_->layout.saved[next];
    if (bytes > view_.branch_->part_extents[flat] || alignment > declared.alignment()) {
      throw error(view_.describe() + ": " + describe_request(kind, next, bytes, alignment) + " does not fit " + kind +
                  " part " + std::to_string(next) + " declared as " + declared.describe() +
                  "; declare the part at least this large and this aligned");
    }
    ++next;
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
};

/// @brief Arenas for slots whose branches are mutually exclusive: an arena is the max over its
/// branches, never the sum, and slots whose lifetimes never overlap may share one arena.
///
/// Use: declare arenas (optional), slots and each slot's branches with their layout; reserve();
/// then look up a (slot, branch) with view() for the address of every part.
///
/// **Upstream.** Any resource with `allocate_sync(bytes, alignment)` and
/// `deallocate_sync(ptr, bytes, alignment)` (cuda_pool_resource, host_resource, a CCCL resource):
/// each arena is then one allocation and every branch of a slot sees the same addresses. An
/// upstream may instead map one physical arena at a separate address window per branch by
/// providing `std::vector<void*> allocate_windows(bytes, alignment, windows)` and
/// `deallocate_windows(const std::vector<void*>&, bytes, alignment)`; branch b of a slot then sees
/// window b. Which of the two holds is the upstream's property; this interface is the same.
///
/// **Thread-safety.** declare_arena, declare_slot, declare_branch, reserve and release change the
/// allocator and must not run concurrently with any other call on it. After reserve() returns (and
/// that return happens-before the other threads' calls, e.g. through thread start or a mutex),
/// view(), statistics() and the getters only read immutable state: any number of threads may call
/// them at once, without locks.
///
/// Copy and move are deleted: views point into the allocator.
template <class Upstream>
class arena_allocator final {
 public:
  /// @brief An allocator that will take its arenas from `upstream`, which must outlive it.
  explicit arena_allocator(Upstream& upstream) noexcept : upstream_(upstream) {}

  arena_allocator(const arena_allocator&) = delete;
  arena_allocator& operator=(const arena_allocator&) = delete;
  arena_allocator(arena_allocator&&) = delete;
  arena_allocator& operator=(arena_allocator&&) = delete;

  /// @brief Returns every arena to the upstream; never throws.
  ~arena_allocator() { release(); }

  /// @brief Declares an arena that several slots will share (their lifetimes must never overlap).
  /// @throws graphpool::error after reserve(), for an empty name, or when the name is taken.
  arena_id declare_arena(std::string name) {
    require_declaring("declare_arena('" + name + "')");
    require_name("declare_arena", "arena", name);
    for (const detail::arena_record& a : arenas_) {
      if (a.name == name) throw error("declare_arena: an arena named '" + name + "' already exists");
    }
    arenas_.push_back(detail::arena_record{std::move(name), {}, {}, 0, 1});
    return arena_id{static_cast<std::uint32_t>(arenas_.size() - 1)};
  }

  /// @brief Declares a slot with an arena of its own (named after the slot).
  /// @throws graphpool::error after reserve(), for an empty name, or when a slot or arena of that name exists.
  slot_id declare_slot(std::string name) {
    require_declaring("declare_slot('" + name + "')");
    require_name("declare_slot", "slot", name);
    require_new_slot_name(name);
    const arena_id own = declare_arena(name);
    return add_slot(std::move(name), own);
  }

  /// @brief Declares a slot that shares `arena` with the other slots placed in it.
  /// @throws graphpool::error after reserve(), for an unknown arena, an empty name, or when the name is taken.
  slot_id declare_slot(std::string name, arena_id arena) {
    require_declaring("declare_slot('" + name + "')");
    require_name("declare_slot", "slot", name);
    require_new_slot_name(name);
    if (arena.index >= arenas_.size()) {
      throw error("declare_slot('" + name + "'): unknown arena " + std::to_string(arena.index) + "; this allocator has " +
                  std::to_string(arenas_.size()) + " arena(s)");
    }
    return add_slot(std::move(name), arena);
  }

  /// @brief Declares a branch of `slot` with its persistent layout.
  ///
  /// Every branch of a slot must declare the same outputs (they share that storage).
  /// @throws graphpool::error after reserve(), for an unknown slot, an empty or taken name, a bad alignment,
  /// or outputs that differ from the slot's first branch (naming both branches and the first differing part).
  branch_id declare_branch(slot_id slot, std::string name, branch_layout layout) {
    require_declaring("declare_branch('" + name + "')");
    detail::slot_record& record = slot_at(slot, "declare_branch");
    require_name(("declare_branch in slot '" + record.name + "'").c_str(), "branch", name);
    const std::string where = "slot '" + record.name + "' branch '" + name + "'";
    for (const detail::placed_branch& b : record.branches) {
      if (b.name == name) throw error(where + ": the slot already has a branch of that name");
    }
    if (!record.branches.empty()) {
      check_same_outputs(record, record.branches.front(), name, layout);
    }
    record.branches.push_back(place(where, std::move(name), std::move(layout)));
    return branch_id{static_cast<std::uint32_t>(record.branches.size() - 1)};
  }

  /// @brief Takes every arena from the upstream, each sized by its largest branch.
  ///
  /// All or nothing: if the upstream fails for one arena, the arenas already taken are returned and
  /// the error names the arena and its size; the declarations stay, so reserve() can be called again.
  /// @throws graphpool::error when already reserved, when a slot has no branch, or when the upstream fails.
  void reserve() {
    if (reserved_) throw error("reserve: the arenas are already reserved; call release() first to reserve again");
    for (const detail::slot_record& s : slots_) {
      if (s.branches.empty()) {
        throw error("reserve: slot '" + s.name + "' has no branch; declare at least one branch before reserve()");
      }
    }
    std::size_t taken = 0;
    try {
      for (; taken < arenas_.size(); ++taken) acquire(arenas_[taken]);
    } catch (...) {
      for (std::size_t i = 0; i < taken; ++i) give_back(arenas_[i]);
      throw;
    }
    reserved_ = true;
  }

  /// @brief Returns every arena to the upstream; views become invalid and declarations may continue.
  void release() noexcept {
    if (!reserved_) return;
    for (detail::arena_record& a : arenas_) give_back(a);
    reserved_ = false;
  }

  /// @return true between reserve() and release().
  [[nodiscard]] bool reserved() const noexcept { return reserved_; }

  /// @return the addresses of (slot, branch)'s parts.
  /// @throws graphpool::error before reserve(), or for an unknown slot or branch.
  [[nodiscard]] branch_view view(slot_id slot, branch_id branch) const {
    const detail::slot_record& record = slot_at(slot, "view");
    if (branch.index >= record.branches.size()) {
      throw error("view: slot '" + record.name + "' has " + std::to_string(record.branches.size()) +
                  " branch(es); branch " + std::to_string(branch.index) + " is unknown");
    }
    if (!reserved_) {
      throw error("view: slot '" + record.name + "' branch '" + record.branches[branch.index].name +
                  "' has no address yet; call reserve() first");
    }
    const detail::arena_record& arena = arenas_[record.arena];
    return branch_view(&record.branches[branch.index], static_cast<std::byte*>(arena.windows[branch.index]),
                       &record.name);
  }

  /// @return a cursor that hands out (slot, branch)'s parts in declaration order.
  [[nodiscard]] branch_cursor cursor(slot_id slot, branch_id branch) const { return branch_cursor(view(slot, branch)); }

  /// @return the slot called `name`.
  /// @throws graphpool::error when there is none.
  [[nodiscard]] slot_id find_slot(const std::string& name) const {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].name == name) return slot_id{static_cast<std::uint32_t>(i)};
    }
    throw error("find_slot: no slot named '" + name + "'");
  }

  /// @return the branch of `slot` called `name`.
  /// @throws graphpool::error when there is none.
  [[nodiscard]] branch_id find_branch(slot_id slot, const std::string& name) const {
    const detail::slot_record& record = slot_at(slot, "find_branch");
    for (std::size_t i = 0; i < record.branches.size(); ++i) {
      if (record.branches[i].name == name) return branch_id{static_cast<std::uint32_t>(i)};
    }
    throw error("find_branch: slot '" + record.name + "' has no branch named '" + name + "'");
  }

  /// @return sizes per arena and in total, against a pool per branch; valid before and after reserve().
  [[nodiscard]] arena_allocator_statistics statistics() const {
    arena_allocator_statistics stats;
    stats.reserved = reserved_;
    for (const detail::slot_record& s : slots_) {
      for (const detail::placed_branch& b : s.branches) stats.per_branch_pool_bytes += b.extent;
    }
    for (const detail::arena_record& a : arenas_) {
      stats.arenas.push_back(need_of(a));
      stats.reserved_bytes += stats.arenas.back().bytes;
    }
    return stats;
  }

  /// @return the upstream arenas come from.
  [[nodiscard]] Upstream& upstream() const noexcept { return upstream_; }

 private:
  void require_declaring(const std::string& call) const {
    if (reserved_) {
      throw error(call + ": the arenas are already reserved; declare everything before reserve(), or call release() "
                         "first");
    }
  }

  // Names identify slots, branches and arenas in every message and in statistics: an empty one says nothing.
  static void require_name(const char* call, const char* kind, const std::string& name) {
    if (name.empty()) {
      throw error(std::string(call) + ": the " + kind + " name is empty; give every " + kind +
                  " a non-empty name (it identifies the " + kind + " in errors and statistics)");
    }
  }

  void require_new_slot_name(const std::string& name) const {
    for (const detail::slot_record& s : slots_) {
      if (s.name == name) throw error("declare_slot: a slot named '" + name + "' already exists");
    }
  }

  slot_id add_slot(std::string name, arena_id arena) {
    const auto index = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(detail::slot_record{std::move(name), arena.index, {}});
    arenas_[arena.index].slots.push_back(index);
    return slot_id{index};
  }

  [[nodiscard]] const detail::slot_record& slot_at(slot_id slot, const char* call) const {
    if (slot.index >= slots_.size()) {
      throw error(std::string(call) + ": unknown slot " + std::to_string(slot.index) + "; this allocator has " +
                  std::to_string(slots_.size()) + " slot(s)");
    }
    return slots_[slot.index];
  }
  [[nodiscard]] detail::slot_record& slot_at(slot_id slot, const char* call) {
    return const_cast<detail::slot_record&>(std::as_const(*this).slot_at(slot, call));
  }

  static void check_same_outputs(const detail::slot_record& slot, const detail::placed_branch& first,
                                 const std::string& name, const branch_layout& layout) {
    const std::vector<part>& expected = first.layout.outputs;
    const std::size_t common = std::min(expected.size(), layout.outputs.size());
    const std::string both = "slot '" + slot.name + "': branch '" + name + "' and branch '" + first.name + "'";
    const std::string fix = "; branches of a slot share output storage and must declare identical outputs";
    for (std::size_t i = 0; i < common; ++i) {
      if (layout.outputs[i] != expected[i]) {
        throw error(both + " differ at output part " + std::to_string(i) + ": " + layout.outputs[i].describe() +
                    " vs " + expected[i].describe() + fix);
      }
    }
    if (layout.outputs.size() != expected.size()) {
      throw error(both + " differ at output part " + std::to_string(common) + ": branch '" + name + "' declares " +
                  std::to_string(layout.outputs.size()) + " output part(s), branch '" + first.name + "' " +
                  std::to_string(expected.size()) + fix);
    }
  }

  /// Places outputs then saved parts from offset 0, each at its alignment.
  static detail::placed_branch place(const std::string& where, std::string name, branch_layout layout) {
    detail::placed_branch placed;
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

  [[nodiscard]] static std::size_t alignment_of(const branch_layout& layout) {
    std::size_t result = 1;
    for (const part& p : layout.outputs) result = std::max(result, p.alignment());
    for (const part& p : layout.saved) result = std::max(result, p.alignment());
    return result;
  }

  /// The arena's size, alignment and window count: the max over the branches of its slots.
  [[nodiscard]] arena_statistics need_of(const detail::arena_record& arena) const {
    arena_statistics need;
    need.name = arena.name;
    need.slots = arena.slots.size();
    bool any_branch = false;  // the first branch sets the size whatever its name
    for (std::uint32_t s : arena.slots) {
      const detail::slot_record& slot = slots_[s];
      need.windows = std::max(need.windows, slot.branches.size());
      for (const detail::placed_branch& b : slot.branches) {
        need.alignment = std::max(need.alignment, alignment_of(b.layout));
        if (!any_branch || b.extent > need.bytes) {
          any_branch = true;
          need.bytes = b.extent;
          need.largest_slot = slot.name;
          need.largest_branch = b.name;
        }
      }
    }
    return need;
  }

  void acquire(detail::arena_record& arena) {
    const arena_statistics need = need_of(arena);
    arena.bytes = need.bytes;
    arena.alignment = need.alignment;
    const std::size_t windows = need.windows;
    if (windows == 0) return;  // an arena no slot uses takes nothing
    try {
      if constexpr (detail::has_windows<Upstream>::value) {
        arena.windows = upstream_.allocate_windows(arena.bytes, arena.alignment, windows);
        if (arena.windows.size() != windows) {
          std::vector<void*> returned = std::move(arena.windows);
          arena.windows.clear();
          upstream_.deallocate_windows(returned, arena.bytes, arena.alignment);
          throw error("the upstream returned " + std::to_string(returned.size()) + " window(s) for " +
                      std::to_string(windows) + " requested");
        }
      } else {
        arena.windows.assign(windows, upstream_.allocate_sync(arena.bytes, arena.alignment));
      }
    } catch (const std::exception& e) {
      const auto* cause = dynamic_cast<const error*>(&e);
      throw error("reserve: arena '" + arena.name + "' of " + detail::format_bytes(arena.bytes) + " (" +
                      std::to_string(arena.bytes) + " bytes, " + std::to_string(windows) +
                      " window(s)) could not be taken from the upstream: " + e.what(),
                  cause != nullptr ? cause->cuda_code() : 0);
    }
  }

  void give_back(detail::arena_record& arena) noexcept {
    if (arena.windows.empty()) return;
    if constexpr (detail::has_windows<Upstream>::value) {
      upstream_.deallocate_windows(arena.windows, arena.bytes, arena.alignment);
    } else {
      upstream_.deallocate_sync(arena.windows.front(), arena.bytes, arena.alignment);
    }
    arena.windows.clear();
  }

  Upstream& upstream_;
  std::vector<detail::arena_record> arenas_;
  std::vector<detail::slot_record> slots_;
  bool reserved_ = false;
};

}  // namespace graphpool
