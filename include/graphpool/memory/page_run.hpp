#pragma once
/// @file page_run.hpp
/// @brief Where a run of a window's pages is mapped: bytes [window_offset, window_offset + bytes) of a
/// window onto [block_offset, block_offset + bytes) of a physical block. No CUDA header (host tests use
/// stand-in blocks).

#include <cstddef>
#include <memory>
#include <vector>

namespace graphpool {

template <class Block>
struct basic_page_run {
  std::size_t window_offset = 0;
  std::shared_ptr<const Block> block;
  std::size_t block_offset = 0;
  std::size_t bytes = 0;
};

/// @brief Adds page `page` of a window (pages of `page_bytes`) mapped to `block` at `block_offset`,
/// extending the last run when both sides continue it.
template <class Block>
void append_page(std::vector<basic_page_run<Block>>& runs, std::size_t page, std::size_t page_bytes,
                 const std::shared_ptr<const Block>& block, std::size_t block_offset) {
  const std::size_t window_offset = page * page_bytes;
  if (!runs.empty()) {
    basic_page_run<Block>& last = runs.back();
    if (last.block == block && last.window_offset + last.bytes == window_offset && last.block_offset + last.bytes == block_offset) {
      last.bytes += page_bytes;
      return;
    }
  }
  runs.push_back({window_offset, block, block_offset, page_bytes});
}

}  // namespace graphpool
