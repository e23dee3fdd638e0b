// The alignment helpers at their exact boundaries: the largest sum that fits, the first that does
// not, and align_up at the top of size_t. An off-by-one in an overflow check fails one of these
// for that reason alone (not because some other size happens to be absurd).

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/host_resource.hpp"
#include "graphpool/memory/layout.hpp"

using graphpool::align_up;
using graphpool::is_valid_alignment;
using graphpool::part;
using graphpool::storage;
using graphpool::detail::check_alignment;
using graphpool::detail::checked_add;
using graphpool::detail::checked_align_up;
using graphpool::testing::contains_text;

namespace {

constexpr std::size_t max = std::numeric_limits<std::size_t>::max();

std::string overflow_message(const std::string& what, std::size_t a, std::size_t b) {
  return what + ": size overflows size_t (" + std::to_string(a) + " + " + std::to_string(b) + " bytes)";
}

}  // namespace

TEST_CASE("is_valid_alignment accepts exactly the non-zero powers of two", "[alignment]") {
  CHECK_FALSE(is_valid_alignment(0));
  CHECK(is_valid_alignment(1));
  CHECK(is_valid_alignment(2));
  CHECK_FALSE(is_valid_alignment(3));
  CHECK(is_valid_alignment(256));
  CHECK_FALSE(is_valid_alignment(255));
  CHECK_FALSE(is_valid_alignment(257));
  CHECK_FALSE(is_valid_alignment(384));
  CHECK(is_valid_alignment(std::size_t{1} << 63));
  CHECK_FALSE(is_valid_alignment((std::size_t{1} << 63) + 1));
  CHECK_FALSE(is_valid_alignment(max));

  CHECK_NOTHROW(check_alignment(1, "x"));
  CHECK_NOTHROW(check_alignment(std::size_t{1} << 63, "x"));
  CHECK_THROWS_WITH(check_alignment(0, "request r"),
                    contains_text("request r: alignment 0 is not a power of two; use 1, 2, 4, ... (graphpool's default "
                                  "is 256)"));
  CHECK_THROWS_WITH(check_alignment(max, "r"), contains_text("alignment " + std::to_string(max) + " is not a power"));
}

TEST_CASE("align_up rounds to the next multiple and keeps multiples", "[alignment]") {
  CHECK(align_up(0, 256) == 0);
  CHECK(align_up(1, 256) == 256);
  CHECK(align_up(255, 256) == 256);
  CHECK(align_up(256, 256) == 256);
  CHECK(align_up(257, 256) == 512);
  CHECK(align_up(12345, 1) == 12345);
  CHECK(align_up(max, 1) == max);
  CHECK(align_up(3, 2) == 4);
  // The largest value that rounds without wrapping: SIZE_MAX - alignment + 1 is itself a multiple.
  CHECK(align_up(max - 255, 256) == max - 255);
  static_assert(align_up(100, 64) == 128, "align_up is usable in constant expressions");
}

TEST_CASE("checked_add: the largest sum that fits is accepted, one more is an error", "[alignment][overflow]") {
  for (const std::size_t b : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{1} << 32, max - 1, max}) {
    INFO("b = " << b);
    CHECK(checked_add(max - b, b, "sum") == max);  // exactly SIZE_MAX: fits
    if (b > 0) {
      CHECK(checked_add(max - b, b - 1, "sum") == max - 1);
      CHECK_THROWS_WITH(checked_add(max - b + 1, b, "sum"), contains_text(overflow_message("sum", max - b + 1, b)));
      CHECK_THROWS_WITH(checked_add(b, max - b + 1, "sum"), contains_text(overflow_message("sum", b, max - b + 1)));
    }
  }
  CHECK(checked_add(0, 0, "zero") == 0);
  CHECK(checked_add(max, 0, "zero") == max);
  CHECK(checked_add(0, max, "zero") == max);
  CHECK_THROWS_WITH(checked_add(max, 1, "part 3"), contains_text(overflow_message("part 3", max, 1)));
  CHECK_THROWS_WITH(checked_add(max, max, "both"), contains_text(overflow_message("both", max, max)));
}

TEST_CASE("checked_align_up: SIZE_MAX - alignment + 1 is the last value that rounds", "[alignment][overflow]") {
  for (const std::size_t alignment : {std::size_t{2}, std::size_t{256}, std::size_t{4096}, std::size_t{1} << 63}) {
    INFO("alignment = " << alignment);
    const std::size_t last = max - alignment + 1;  // the largest multiple of alignment
    CHECK(checked_align_up(last, alignment, "a") == last);
    CHECK(checked_align_up(last - 1, alignment, "a") == last);
    CHECK(checked_align_up(last - alignment + 1, alignment, "a") == last);
    CHECK(checked_align_up(0, alignment, "a") == 0);
    CHECK(checked_align_up(1, alignment, "a") == alignment);
    // One past the last multiple rounds to 2^64: an overflow, reported with the numbers added.
    CHECK_THROWS_WITH(checked_align_up(last + 1, alignment, "a"),
                      contains_text(overflow_message("a", last + 1, alignment - 1)));
    CHECK_THROWS_WITH(checked_align_up(max, alignment, "a"), contains_text(overflow_message("a", max, alignment - 1)));
  }
  // Alignment 1 never rounds, so even SIZE_MAX fits.
  CHECK(checked_align_up(max, 1, "one") == max);
  CHECK(checked_align_up(max - 1, 1, "one") == max - 1);
}

TEST_CASE("a part's placement fits up to exactly SIZE_MAX bytes and not one more", "[alignment][overflow][layout]") {
  // storage 0 ends at max - 300; storage 1 starts at the next multiple of 256, max - 255.
  const part exact = part::group({storage{max - 300, 1}, storage{255, 256}});
  CHECK(exact.placement("g") == std::vector<std::size_t>{0, max - 255, max});
  CHECK_THROWS_WITH(part::group({storage{max - 300, 1}, storage{256, 256}}).placement("g"),
                    contains_text(overflow_message("g storage 1", max - 255, 256)));
  // The aligned start of storage 1 itself is past the end.
  CHECK_THROWS_WITH(part::group({storage{max - 254, 1}, storage{0, 256}}).placement("g"),
                    contains_text(overflow_message("g storage 1", max - 254, 255)));
  CHECK(part(max, 1).placement("p") == std::vector<std::size_t>{0, max});
}

TEST_CASE("a branch may span exactly SIZE_MAX bytes; one more byte is an error", "[alignment][overflow][arena]") {
  graphpool::host_resource upstream;
  graphpool::arena_allocator<graphpool::host_resource> arenas(upstream);
  const graphpool::slot_id slot = arenas.declare_slot("edge");
  // Output of 1 byte, then a saved part aligned to 256: it starts at 256 and ends at SIZE_MAX.
  const auto fits = arenas.declare_branch(slot, "fits", {{part(1, 1)}, {part(max - 256, 256)}});
  CHECK(arenas.statistics().arenas[0].bytes == max);
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "over", {{part(1, 1)}, {part(max - 255, 256)}}),
                    contains_text(overflow_message("slot 'edge' branch 'over' saved part 0", 256, max - 255)));
  CHECK(fits == graphpool::branch_id{0});
}
