#pragma once
/// @file arena_allocator.hpp
/// @brief Arenas for slots of mutually exclusive branches: each arena is sized by its largest branch.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/arena_records.hpp"
#include "graphpool/memory/arena_statistics.hpp"
#include "graphpool/memory/branch_view.hpp"
#include "graphpool/memory/layout.hpp"
#include "graphpool/memory/reservation_layout.hpp"
#include "graphpool/memory/upstream_reservation.hpp"

namespace graphpool {

/// @brief Arenas for slots whose branches are mutually exclusive: an arena is the max over its
/// branches, never the sum, and slots whose lifetimes never overlap may share one arena.
///
/// Use: declare arenas (optional), slots and each slot's branches with their layout; reserve();
/// then look up a (slot, branch) with view() for the address of every part. A slot may also sit at
/// a byte offset inside a shared arena (`declare_slot(name, arena, offset)`), which is how a
/// planner's offsets reach memory: slots whose lifetimes never overlap may overlap in bytes.
///
/// **Upstream.** Any resource with `allocate_sync(bytes, alignment)` and
/// `deallocate_sync(ptr, bytes, alignment)` (cuda_pool_resource, host_resource, a CCCL resource):
/// every branch of a slot then sees the same addresses. An upstream may instead map its memory at a
/// separate address window per branch by providing
/// `std::vector<void*> allocate_windows(bytes, alignment, windows)` and
/// `deallocate_windows(const std::vector<void*>&, bytes, alignment)`; branch b of a slot then sees
/// window b. reserve() takes every arena in **one** upstream request (arenas back to back, each
/// aligned), so an upstream that rounds (a cudaMemPool_t grows in 32 MiB steps) rounds once.
///
/// **Names.** Slot, arena and branch names appear in every message; they must not be empty.
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
  explicit arena_allocator(Upstream& upstream) noexcept : upstream_(upstream), reservation_(upstream) {}

  arena_allocator(const arena_allocator&) = delete;
  arena_allocator& operator=(const arena_allocator&) = delete;
  arena_allocator(arena_allocator&&) = delete;
  arena_allocator& operator=(arena_allocator&&) = delete;

  /// @brief Returns the reservation to the upstream; never throws.
  ~arena_allocator() { release(); }

  /// @brief Declares an arena that several slots will share (their lifetimes must never overlap).
  /// @throws graphpool::error after reserve(), for an empty name, or when the name is taken.
  arena_id declare_arena(std::string name) {
    require_declaring("declare_arena('" + name + "')");
    require_name("declare_arena", "arena", name);
    if (has_arena_named(name)) {
      throw error("declare_arena: an arena named '" + name + "' already exists (a slot declared with an arena of its own "
                  "gives the arena its name); give every arena a name of its own");
    }
    arenas_.push_back(detail::arena_record{std::move(name), {}, 0, 0, 1});
    return arena_id{static_cast<std::uint32_t>(arenas_.size() - 1)};
  }

  /// @brief Declares a slot with an arena of its own (named after the slot).
  /// @throws graphpool::error after reserve(), for an empty name, or when a slot or arena of that name exists.
  slot_id declare_slot(std::string name) {
    require_declaring("declare_slot('" + name + "')");
    require_name("declare_slot", "slot", name);
    require_new_slot_name(name);
    if (has_arena_named(name)) {
      throw error("declare_slot('" + name + "'): the slot's own arena would be named '" + name + "', but an arena of "
                  "that name exists; rename the slot, or place it in that arena with declare_slot(name, arena, offset)");
    }
    const arena_id own = declare_arena(name);
    return add_slot(std::move(name), own, 0);
  }

  /// @brief Declares a slot that shares `arena` with the other slots placed in it, its branches
  /// starting `offset` bytes into the arena (a multiple of every part's alignment; checked at reserve()).
  /// @throws graphpool::error after reserve(), for an unknown arena, an empty name, or when the name is taken.
  slot_id declare_slot(std::string name, arena_id arena, std::size_t offset = 0) {
    require_declaring("declare_slot('" + name + "')");
    require_name("declare_slot", "slot", name);
    require_new_slot_name(name);
    if (arena.index >= arenas_.size()) {
      throw error("declare_slot('" + name + "'): unknown arena " + std::to_string(arena.index) + "; this allocator has " +
                  std::to_string(arenas_.size()) + " arena(s)");
    }
    return add_slot(std::move(name), arena, offset);
  }

  /// @brief Declares a branch of `slot` with its persistent layout.
  ///
  /// Every branch of a slot must declare the same outputs (they share that storage).
  /// @throws graphpool::error after reserve(), for an unknown slot, an empty or taken name, a bad
  /// alignment, or outputs that differ from the slot's first branch (naming both branches and the
  /// first differing part).
  branch_id declare_branch(slot_id slot, std::string name, branch_layout layout) {
    require_declaring("declare_branch('" + name + "')");
    detail::slot_record& record = slot_at(slot, "declare_branch");
    require_name(("declare_branch in slot '" + record.name + "'").c_str(), "branch", name);
    const std::string where = "slot '" + record.name + "' branch '" + name + "'";
    for (const detail::placed_branch& b : record.branches) {
      if (b.name == name) throw error(where + ": the slot already has a branch of that name");
    }
    if (!record.branches.empty()) {
      detail::check_same_outputs(record.name, record.branches.front(), name, layout);
    }
    detail::placed_branch placed = detail::place_branch(where, std::move(name), std::move(layout));
    static_cast<void>(detail::checked_add(record.offset, placed.extent, where + " at offset " + std::to_string(record.offset)));
    record.branches.push_back(std::move(placed));
    return branch_id{static_cast<std::uint32_t>(record.branches.size() - 1)};
  }

  /// @brief Takes every arena from the upstream in one request, each sized by its largest branch.
  ///
  /// All or nothing: if the upstream fails, nothing is held, the error names the size, and the
  /// declarations stay, so reserve() can be called again.
  /// @throws graphpool::error when already reserved, when a slot has no branch or sits at an offset
  /// its parts' alignment does not divide, or when the upstream fails.
  void reserve() {
    if (reserved_) throw error("reserve: the arenas are already reserved; call release() first to reserve again");
    const auto [offsets, total, alignment, windows] = detail::lay_out_reservation(arenas_, slots_);
    try {
      reservation_.take(total, alignment, windows);
    } catch (const std::exception& e) {
      detail::upstream_failed(arenas_, total, windows, e);
    }
    for (std::size_t a = 0; a < arenas_.size(); ++a) arenas_[a].offset = offsets[a];
    reserved_ = true;
  }

  /// @brief Returns the reservation to the upstream; views become invalid and declarations may continue.
  void release() noexcept {
    if (!reserved_) return;
    reservation_.give_back();
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
    std::byte* base = reservation_.base(branch.index);
    if (base != nullptr) base += arenas_[record.arena].offset + record.offset;
    return branch_view(&record.branches[branch.index], base, &record.name);
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
  /// A total that does not fit in size_t reads SIZE_MAX (reserve() then fails, naming the arena).
  [[nodiscard]] arena_allocator_statistics statistics() const {
    arena_allocator_statistics stats;
    stats.reserved = reserved_;
    constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
    const auto add = [](std::size_t a, std::size_t b) { return a > most - b ? most : a + b; };
    const auto aligned = [](std::size_t a, std::size_t alignment) {
      return a > most - (alignment - 1) ? most : align_up(a, alignment);
    };
    std::size_t& per_branch = stats.per_branch_pool_bytes;
    for (const detail::slot_record& s : slots_) {
      for (const detail::placed_branch& b : s.branches) per_branch = add(per_branch, b.extent);
    }
    std::size_t total = 0;
    for (const detail::arena_record& a : arenas_) {
      stats.arenas.push_back(detail::need_of(a, slots_));
      total = add(aligned(total, stats.arenas.back().alignment), stats.arenas.back().bytes);
    }
    stats.reserved_bytes = reserved_ ? reservation_.bytes() : total;
    stats.upstream_bytes = reservation_.upstream_bytes();
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

  [[nodiscard]] bool has_arena_named(const std::string& name) const {
    return std::any_of(arenas_.begin(), arenas_.end(), [&](const detail::arena_record& a) { return a.name == name; });
  }

  void require_new_slot_name(const std::string& name) const {
    for (const detail::slot_record& s : slots_) {
      if (s.name == name) {
        throw error("declare_slot: a slot named '" + name + "' already exists; give every slot a name of its own");
      }
    }
  }

  slot_id add_slot(std::string name, arena_id arena, std::size_t offset) {
    const auto index = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(detail::slot_record{std::move(name), arena.index, offset, {}});
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

  Upstream& upstream_;
  std::vector<detail::arena_record> arenas_;
  std::vector<detail::slot_record> slots_;
  detail::upstream_reservation<Upstream> reservation_;  // the one request, taken by reserve()
  bool reserved_ = false;
};

}  // namespace graphpool
