#pragma once
/// @file layout.hpp
/// @brief What a branch of a slot asks for: parts (bytes, alignment), each placed as one contiguous unit.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"

namespace graphpool {

/// @brief One storage inside a part: a tensor's bytes and the alignment its kernels need.
struct storage {
  std::size_t bytes = 0;
  std::size_t alignment = default_alignment;

  [[nodiscard]] friend bool operator==(const storage& a, const storage& b) noexcept {
    return a.bytes == b.bytes && a.alignment == b.alignment;
  }
  [[nodiscard]] friend bool operator!=(const storage& a, const storage& b) noexcept { return !(a == b); }
};


/// @brief A unit of placement: one storage, or a group of storages that must stay together
/// (an MXFP8 tensor's data and its scales), laid out back to back, each at its own alignment.
class part {
 public:
  /// @brief A part of one storage of `bytes` aligned to `alignment`.
  part(std::size_t bytes, std::size_t alignment = default_alignment) : storages_{storage{bytes, alignment}} {}  // NOLINT

  /// @brief A group placed as one contiguous unit; its alignment is the largest of its storages'.
  /// @throws graphpool::error when `storages` is empty.
  [[nodiscard]] static part group(std::vector<storage> storages) {
    if (storages.empty()) {
      throw error("part::group: a group needs at least one storage");
    }
    return part(std::move(storages));
  }

  /// @return the storages of this part, in placement order.
  [[nodiscard]] const std::vector<storage>& storages() const noexcept { return storages_; }

  /// @return the alignment of the part's start: the largest alignment of its storages.
  [[nodiscard]] std::size_t alignment() const noexcept {
    std::size_t result = 1;
    for (const storage& s : storages_) result = std::max(result, s.alignment);
    return result;
  }

  /// @brief Offsets of each storage from the part's start, and the part's extent, in one vector:
  /// element i < storages().size() is storage i's offset, the last element is the extent in bytes.
  /// @throws graphpool::error for a bad alignment (`what` names the part) or a size overflow.
  [[nodiscard]] std::vector<std::size_t> placement(const std::string& what) const {
    std::vector<std::size_t> offsets;
    offsets.reserve(storages_.size() + 1);
    std::size_t offset = 0;
    for (std::size_t i = 0; i < storages_.size(); ++i) {
      const std::string where = what + " storage " + std::to_string(i);
      detail::check_alignment(storages_[i].alignment, where);
      offset = detail::checked_align_up(offset, storages_[i].alignment, where);
      offsets.push_back(offset);
      offset = detail::checked_add(offset, storages_[i].bytes, where);
    }
    offsets.push_back(offset);
    return offsets;
  }

  /// @return a short description: "4096 B @256" or "group{4096 B @256, 128 B @16}".
  [[nodiscard]] std::string describe() const {
    auto one = [](const storage& s) { return std::to_string(s.bytes) + " B @" + std::to_string(s.alignment); };
    if (storages_.size() == 1) return one(storages_.front());
    std::string text = "group{";
    for (std::size_t i = 0; i < storages_.size(); ++i) text += (i == 0 ? "" : ", ") + one(storages_[i]);
    return text + "}";
  }

  [[nodiscard]] friend bool operator==(const part& a, const part& b) noexcept { return a.storages_ == b.storages_; }
  [[nodiscard]] friend bool operator!=(const part& a, const part& b) noexcept { return !(a == b); }

 private:
  explicit part(std::vector<storage> storages) : storages_(std::move(storages)) {}
  std::vector<storage> storages_;
};

/// @brief The persistent memory one branch of a slot asks for.
///
/// `outputs` are shared by every branch of the slot (consumers read them at one address whichever
/// branch ran), so every branch must declare identical outputs. `saved` are the branch's own
/// (tensors its forward saves for its backward); they may differ between branches and are placed
/// after the outputs. The branch's extent is what its parts need, outputs first, each aligned.
struct branch_layout {
  std::vector<part> outputs;
  std::vector<part> saved;
};

}  // namespace graphpool
