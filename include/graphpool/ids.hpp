#pragma once
/// @file ids.hpp
/// @brief The typed identities every layer shares: chunk, slot, layer, branch, arena, frame.
///
/// Each is a 0-based index wrapped in its own type, so a layer can never be passed where a branch is
/// expected. No CUDA header: the plan layer uses them too.

#include <cstdint>
#include <functional>
#include <string>

namespace graphpool {

/// @brief A 0-based index of one kind of thing (`Tag` says which); compare, hash and print it.
template <class Tag>
struct basic_id {
  std::uint32_t index = 0;

  [[nodiscard]] friend constexpr bool operator==(basic_id a, basic_id b) noexcept { return a.index == b.index; }
  [[nodiscard]] friend constexpr bool operator!=(basic_id a, basic_id b) noexcept { return a.index != b.index; }
  [[nodiscard]] friend constexpr bool operator<(basic_id a, basic_id b) noexcept { return a.index < b.index; }

  /// @return "chunk 2", "branch 0", ...
  [[nodiscard]] std::string describe() const { return std::string(Tag::word) + " " + std::to_string(index); }
};

namespace detail {
struct chunk_tag { static constexpr const char* word = "chunk"; };
struct slot_tag { static constexpr const char* word = "slot"; };
struct layer_tag { static constexpr const char* word = "layer"; };
struct branch_tag { static constexpr const char* word = "branch"; };
struct arena_tag { static constexpr const char* word = "arena"; };
struct frame_tag { static constexpr const char* word = "frame"; };
}  // namespace detail

using chunk_id = basic_id<detail::chunk_tag>;    ///< a model chunk (virtual pipeline stage) of a rank
using slot_id = basic_id<detail::slot_tag>;      ///< a slot: a captured copy, or an arena_allocator slot
using layer_id = basic_id<detail::layer_tag>;    ///< a layer within its chunk
using branch_id = basic_id<detail::branch_tag>;  ///< a branch (variant) of a slot
using arena_id = basic_id<detail::arena_tag>;    ///< an arena: one contiguous range of memory
using frame_id = basic_id<detail::frame_tag>;    ///< a planned frame: (chunk, slot, layer)

}  // namespace graphpool

/// Hashing, so ids key unordered containers.
template <class Tag>
struct std::hash<graphpool::basic_id<Tag>> {
  std::size_t operator()(graphpool::basic_id<Tag> id) const noexcept { return std::hash<std::uint32_t>{}(id.index); }
};
