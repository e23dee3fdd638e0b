#pragma once
/// @file upstream_reservation.hpp
/// @brief The one request an arena_allocator makes of its upstream: what the upstream can do (one
/// address, or a window of addresses per branch over the same memory) and what it returned.

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"

namespace graphpool::detail {

/// @brief True when `Upstream` maps one physical arena at several addresses (one window per branch).
template <class Upstream, class = void>
struct has_windows : std::false_type {};
template <class Upstream>
struct has_windows<Upstream, std::void_t<decltype(std::declval<std::vector<void*>&>() =
                                                      std::declval<Upstream&>().allocate_windows(
                                                          std::size_t{}, std::size_t{}, std::size_t{}))>>
    : std::true_type {};

/// @brief True when `Upstream` can say how much device memory it holds (`reserved_bytes()`).
template <class Upstream, class = void>
struct has_reserved_bytes : std::false_type {};
template <class Upstream>
struct has_reserved_bytes<Upstream, std::void_t<decltype(std::size_t{std::declval<const Upstream&>().reserved_bytes()})>>
    : std::true_type {};

/// @brief One request to `Upstream` held until give_back(): `bytes` at `alignment`, at one address
/// (`allocate_sync`) or, for an upstream with `allocate_windows`, through one address window per
/// branch. Owned by one allocator; not thread-safe on its own.
template <class Upstream>
class upstream_reservation final {
 public:
  explicit upstream_reservation(Upstream& upstream) noexcept : upstream_(upstream) {}
  upstream_reservation(const upstream_reservation&) = delete;
  upstream_reservation& operator=(const upstream_reservation&) = delete;
  ~upstream_reservation() { give_back(); }

  /// @brief Takes `bytes` (zero bytes asks the upstream nothing) seen through `windows` windows, and
  /// notes how much the upstream's own counter grew (`upstream_bytes()`). Nothing may be held already.
  /// @throws what the upstream throws, or graphpool::error when it returns another number of windows
  /// than asked (it gets them back); nothing is held then.
  void take(std::size_t bytes, std::size_t alignment, std::size_t windows) {
    const std::size_t before = upstream_held();
    if (bytes > 0) {
      if constexpr (has_windows<Upstream>::value) {
        std::vector<void*> bases = upstream_.allocate_windows(bytes, alignment, windows);
        if (bases.size() != windows) {
          upstream_.deallocate_windows(bases, bytes, alignment);
          throw error("the upstream returned " + std::to_string(bases.size()) + " window(s) for " +
                      std::to_string(windows) + " requested");
        }
        bases_ = std::move(bases);
      } else {
        bases_.assign(1, upstream_.allocate_sync(bytes, alignment));
      }
    }
    const std::size_t after = upstream_held();
    upstream_bytes_ = after > before ? after - before : 0;
    bytes_ = bytes;
    alignment_ = alignment;
  }

  /// @brief Returns what take() got to the upstream; never throws, does nothing when nothing is held.
  void give_back() noexcept {
    if (!bases_.empty()) {
      if constexpr (has_windows<Upstream>::value) {
        upstream_.deallocate_windows(bases_, bytes_, alignment_);
      } else {
        upstream_.deallocate_sync(bases_.front(), bytes_, alignment_);
      }
    }
    bases_.clear();
    bytes_ = 0;
    upstream_bytes_ = 0;
  }

  /// @return where branch `window`'s view of the reservation starts (every branch sees the same
  /// address on an upstream without windows); nullptr when nothing is held.
  [[nodiscard]] std::byte* base(std::size_t window) const noexcept {
    if (bases_.empty()) return nullptr;
    return static_cast<std::byte*>(bases_[has_windows<Upstream>::value ? window : 0]);
  }

  /// @return the bytes take() asked for (0 after give_back()).
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// @return what the upstream's own counter grew by at take() (0 for an upstream without one).
  [[nodiscard]] std::size_t upstream_bytes() const noexcept { return upstream_bytes_; }

 private:
  [[nodiscard]] std::size_t upstream_held() const {
    if constexpr (has_reserved_bytes<Upstream>::value) {
      return upstream_.reserved_bytes();
    } else {
      return 0;
    }
  }

  Upstream& upstream_;
  std::vector<void*> bases_;  // one base per window (one for a plain upstream)
  std::size_t bytes_ = 0;
  std::size_t alignment_ = 1;
  std::size_t upstream_bytes_ = 0;
};

}  // namespace graphpool::detail
