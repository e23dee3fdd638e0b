#pragma once
/// @file page_run.hpp
/// @brief Where a run of a window's pages is mapped: bytes [window_offset, window_offset + bytes) of a
/// window onto [block_offset, block_offset + bytes) of a physical block. No CUDA header (host tests use
/// stand-in blocks).

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graphpool/error.hpp"

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

/// @brief The runs of a window whose first `used_pages` pages are mapped by liveness: the pages in
/// `persistent`, in order, onto `persistent_block` from `frame_offset`; every other page, in order, onto
/// `scratch` from its start. @throws graphpool::error naming `what` when the persistent pages run past
/// `persistent_block`'s end.
template <class Block>
[[nodiscard]] std::vector<basic_page_run<Block>> liveness_runs(std::size_t used_pages, const std::set<std::size_t>& persistent,
                                                               const std::shared_ptr<const Block>& persistent_block,
                                                               std::size_t frame_offset, const std::shared_ptr<const Block>& scratch,
                                                               std::size_t page_bytes, const std::string& what) {
  std::vector<basic_page_run<Block>> runs;
  std::size_t private_page = 0;
  std::size_t scratch_page = 0;
  for (std::size_t page = 0; page < used_pages; ++page) {
    if (persistent.count(page) > 0) {
      const std::size_t at = frame_offset + private_page++ * page_bytes;
      if (!persistent_block || at + page_bytes > persistent_block->bytes()) {
        throw error(what + ": " + std::to_string(persistent.size()) + " persistent page(s) from offset " +
                    std::to_string(frame_offset) + " run past the persistent block's " +
                    std::to_string(persistent_block ? persistent_block->bytes() : 0) + " bytes");
      }
      append_page(runs, page, page_bytes, persistent_block, at);
    } else {
      append_page(runs, page, page_bytes, scratch, scratch_page++ * page_bytes);
    }
  }
  return runs;
}

}  // namespace graphpool
