// The arena allocator over host memory: sizes, addresses, sharing, statistics and every bad input.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/host_resource.hpp"
#include "counting_resource.hpp"
#include "memory_check.hpp"

using graphpool::arena_allocator;
using graphpool::branch_id;
using graphpool::branch_layout;
using graphpool::host_resource;
using graphpool::part;
using graphpool::arena_id;
using graphpool::slot_id;
using graphpool::storage;
using graphpool::testing::counting_resource;
using graphpool::testing::overlaps;
using graphpool::testing::windowed_resource;
using graphpool::testing::contains_text;

namespace {

constexpr std::size_t KiB = 1024;

branch_layout saved_only(std::size_t bytes) { return branch_layout{{}, {part(bytes)}}; }

}  // namespace

TEST_CASE("an arena is the max over its branches, never the sum", "[arena]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("layer0");
  const std::vector<std::size_t> sizes{512 * KiB, 64 * KiB, 1024 * KiB, 256 * KiB};
  std::vector<branch_id> branches;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    branches.push_back(arenas.declare_branch(slot, "cp" + std::to_string(1 << i), saved_only(sizes[i])));
  }
  arenas.reserve();

  CHECK(upstream.live_allocations() == 1);
  CHECK(upstream.live_bytes() == 1024 * KiB);
  const auto stats = arenas.statistics();
  CHECK(stats.reserved);
  CHECK(stats.reserved_bytes == 1024 * KiB);
  CHECK(stats.per_branch_pool_bytes == (512 + 64 + 1024 + 256) * KiB);
  REQUIRE(stats.arenas.size() == 1);
  CHECK(stats.arenas[0].largest_slot == "layer0");
  CHECK(stats.arenas[0].largest_branch == "cp4");
  CHECK(stats.arenas[0].windows == 4);

  // One allocation: every branch of the slot sees the same address, and bytes written through one
  // branch are read through another.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(arenas.view(slot, branches[i]).saved(0) == arenas.view(slot, branches[0]).saved(0));
    CHECK(arenas.view(slot, branches[i]).bytes() == sizes[i]);
  }
  std::memset(arenas.view(slot, branches[2]).saved(0), 0x5a, sizes[2]);
  const auto* read = static_cast<const unsigned char*>(arenas.view(slot, branches[1]).saved(0));
  CHECK(read[0] == 0x5a);
  CHECK(read[sizes[1] - 1] == 0x5a);

  arenas.release();
  CHECK(upstream.live_allocations() == 0);
  CHECK(upstream.mismatched_frees() == 0);
}

TEST_CASE("outputs sit first at one address in every branch, saved parts after them, each aligned", "[arena]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("attn");
  const std::vector<part> outputs{part(1000, 256), part(24, 64)};
  const branch_id small = arenas.declare_branch(slot, "small", {outputs, {part(10, 16), part(4096, 4096)}});
  const branch_id large = arenas.declare_branch(slot, "large", {outputs, {part(100000)}});
  arenas.reserve();

  const auto a = arenas.view(slot, small);
  const auto b = arenas.view(slot, large);
  const auto base = reinterpret_cast<std::uintptr_t>(a.base());
  CHECK(base % 4096 == 0);  // the arena is aligned to its strictest part
  for (std::size_t i = 0; i < outputs.size(); ++i) CHECK(a.output(i) == b.output(i));
  CHECK(reinterpret_cast<std::uintptr_t>(a.output(0)) == base);
  CHECK(reinterpret_cast<std::uintptr_t>(a.output(1)) == base + 1024);
  CHECK(reinterpret_cast<std::uintptr_t>(a.saved(0)) == base + 1024 + 32);
  CHECK(reinterpret_cast<std::uintptr_t>(a.saved(1)) == base + 4096);
  CHECK(a.bytes() == 8192);
  CHECK(reinterpret_cast<std::uintptr_t>(b.saved(0)) == base + 1280);
  CHECK(b.bytes() == 1280 + 100000);
  CHECK(arenas.statistics().reserved_bytes == 1280 + 100000);
  CHECK(arenas.statistics().arenas[0].alignment == 4096);

  // Within one branch no two parts overlap.
  CHECK_FALSE(overlaps(a.output(1), 24, a.saved(0), 10));
  CHECK_FALSE(overlaps(a.saved(0), 10, a.saved(1), 4096));
}

TEST_CASE("a grouped part is one contiguous unit with each storage at its own alignment", "[arena]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("mlp");
  const part mxfp8 = part::group({storage{3000, 256}, storage{100, 16}, storage{7, 128}});
  CHECK(mxfp8.alignment() == 256);
  CHECK(mxfp8.placement("mxfp8") == std::vector<std::size_t>{0, 3008, 3200, 3207});
  const branch_id only = arenas.declare_branch(slot, "fp8", {{}, {part(1), mxfp8}});
  arenas.reserve();

  const auto view = arenas.view(slot, only);
  const auto base = reinterpret_cast<std::uintptr_t>(view.base());
  CHECK(view.saved(1) == view.saved_storage(1, 0));
  CHECK(reinterpret_cast<std::uintptr_t>(view.saved_storage(1, 0)) == base + 256);
  CHECK(reinterpret_cast<std::uintptr_t>(view.saved_storage(1, 1)) == base + 256 + 3008);
  CHECK(reinterpret_cast<std::uintptr_t>(view.saved_storage(1, 2)) == base + 256 + 3200);
  CHECK(view.bytes() == 256 + 3207);
  CHECK_THROWS_WITH(view.saved_storage(1, 3), contains_text("storage 3 is beyond what was declared"));
  CHECK_THROWS_WITH(part::group({}), contains_text("at least one storage"));
}

TEST_CASE("slots that share an arena get the size of the largest of them", "[arena]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  const auto shared = arenas.declare_arena("frames-0");
  const slot_id first = arenas.declare_slot("chunk0/slot0/layer0", shared);
  const slot_id second = arenas.declare_slot("chunk0/slot1/layer0", shared);
  const slot_id alone = arenas.declare_slot("grads");
  arenas.declare_branch(first, "cp1", saved_only(300 * KiB));
  arenas.declare_branch(first, "cp2", saved_only(200 * KiB));
  arenas.declare_branch(second, "cp1", saved_only(700 * KiB));
  arenas.declare_branch(alone, "cp1", saved_only(5 * KiB));
  arenas.reserve();

  CHECK(upstream.live_allocations() == 1);  // every arena in one upstream request
  CHECK(upstream.live_bytes() == 705 * KiB);
  const auto stats = arenas.statistics();
  CHECK(stats.reserved_bytes == 705 * KiB);
  CHECK(stats.per_branch_pool_bytes == 1205 * KiB);
  REQUIRE(stats.arenas.size() == 2);
  CHECK(stats.arenas[0].name == "frames-0");
  CHECK(stats.arenas[0].slots == 2);
  CHECK(stats.arenas[0].largest_slot == "chunk0/slot1/layer0");
  CHECK(arenas.view(first, branch_id{1}).base() == arenas.view(second, branch_id{0}).base());
  CHECK(arenas.view(alone, branch_id{0}).base() ==
        static_cast<std::byte*>(arenas.view(first, branch_id{0}).base()) + 700 * KiB);
  CHECK(arenas.find_slot("grads") == alone);
  CHECK(arenas.find_branch(first, "cp2") == branch_id{1});

  const std::string summary = stats.summary();
  CHECK_THAT(summary, contains_text("frames-0"));
  CHECK_THAT(summary, contains_text("chunk0/slot1/layer0 / cp1"));
  CHECK_THAT(summary, contains_text("reserved: 705.00 KiB; a pool per branch: 1.18 MiB (1.71x)"));
}

TEST_CASE("branches whose outputs differ are rejected, naming the slot, both branches and the part", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("layer3");
  arenas.declare_branch(slot, "cp1", {{part(4096), part(512)}, {part(100)}});

  CHECK_THROWS_WITH(arenas.declare_branch(slot, "cp2", {{part(4096), part(1024)}, {}}),
                    contains_text("slot 'layer3': branch 'cp2' and branch 'cp1' differ at output part 1: 1024 B @256 vs "
                             "512 B @256"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "cp4", {{part(4096), part(512, 128)}, {}}),
                    contains_text("differ at output part 1: 512 B @128 vs 512 B @256"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "cp8", {{part(4096)}, {}}),
                    contains_text("differ at output part 1: branch 'cp8' declares 1 output part(s), branch 'cp1' 2"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "cp16", {{part(4096), part(512), part(8)}, {}}),
                    contains_text("differ at output part 2"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "cp32", {{part::group({{4096, 256}}), part::group({{256, 256}, {256, 256}})}, {}}),
                    contains_text("group{256 B @256, 256 B @256} vs 512 B @256"));
  // A rejected branch leaves nothing behind: the next good one is branch 1.
  CHECK(arenas.declare_branch(slot, "cp2", {{part(4096), part(512)}, {part(9999)}}) == branch_id{1});
}

TEST_CASE("bad alignments are rejected wherever they appear", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("s");
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "zero", {{}, {part(8, 0)}}), contains_text("alignment 0 is not a power"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "three", {{}, {part(8), part(64, 48)}}),
                    contains_text("slot 's' branch 'three' saved part 1 storage 0: alignment 48 is not a power of two"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "group", {{part::group({{8, 256}, {8, 6}})}, {}}),
                    contains_text("output part 0 storage 1: alignment 6"));
  CHECK_THROWS_WITH(upstream.allocate_sync(64, 12), contains_text("alignment 12 is not a power of two"));
  const branch_id ok = arenas.declare_branch(slot, "ok", saved_only(64));
  arenas.reserve();
  auto cursor = arenas.cursor(slot, ok);
  CHECK_THROWS_WITH(cursor.allocate(64, 0), contains_text("alignment 0 is not a power of two"));
  CHECK(cursor.served() == 0);
}

TEST_CASE("requests beyond what was declared are errors, never overlap", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("layer0");
  const branch_id cp1 = arenas.declare_branch(slot, "cp1", {{part(256)}, {part(1024), part(64)}});
  arenas.reserve();

  const auto view = arenas.view(slot, cp1);
  CHECK_THROWS_WITH(view.output(1), contains_text("slot 'layer0' branch 'cp1' declared 1 output part(s); output part 1 is "
                                             "beyond what was declared"));
  CHECK_THROWS_WITH(view.saved(2), contains_text("declared 2 saved part(s); saved part 2 is beyond"));

  auto cursor = arenas.cursor(slot, cp1);
  CHECK(cursor.allocate(256) == view.output(0));
  CHECK_THROWS_WITH(cursor.allocate(2048), contains_text("saved request 0 (2048 B @256) does not fit saved part 0 "
                                                         "declared as 1024 B @256"));
  CHECK_THROWS_WITH(cursor.allocate(1024, 512), contains_text("does not fit saved part 0"));
  CHECK(cursor.allocate(1000) == view.saved(0));
  CHECK(cursor.allocate(64, 64) == view.saved(1));
  CHECK_THROWS_WITH(cursor.allocate(1), contains_text("saved request 2 (1 B @256) is beyond what was declared: the "
                                                      "branch declared 2 saved part(s)"));
  CHECK_THROWS_WITH(cursor.allocate_output(1), contains_text("output request 1 (1 B @256) is beyond what was declared"));
  CHECK(cursor.served() == 3);

  // Outputs and saved parts may be asked for interleaved: each kind keeps its own order.
  auto interleaved = arenas.cursor(slot, cp1);
  CHECK(interleaved.allocate_saved(1024) == view.saved(0));
  CHECK(interleaved.allocate_output(256) == view.output(0));
  CHECK(interleaved.allocate_saved(64) == view.saved(1));
}

TEST_CASE("a declared part of zero bytes is passed over: no request could take it", "[arena]") {
  // A zero-byte request returns nullptr and takes no part, so a zero-byte part would otherwise stop every
  // request after it (an audit's case: outputs {4096, 0}, then a 150-byte request).
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("layer0");
  const branch_id b = arenas.declare_branch(slot, "cp1", {{part(4096), part(0), part(0)}, {part(0), part(512)}});
  arenas.reserve();
  const auto view = arenas.view(slot, b);
  auto cursor = arenas.cursor(slot, b);
  CHECK(cursor.allocate(4096) == view.output(0));
  CHECK(cursor.allocate(0) == nullptr);
  CHECK(cursor.allocate(150) == view.saved(1));  // past output parts 1 and 2, and saved part 0
  CHECK(cursor.served() == 2);
  CHECK_THROWS_WITH(cursor.allocate(1), contains_text("saved request 2 (1 B @256) is beyond what was declared"));
  auto outputs = arenas.cursor(slot, b);
  CHECK(outputs.allocate_output(4096) == view.output(0));
  CHECK_THROWS_WITH(outputs.allocate_output(8), contains_text("output request 3 (8 B @256) is beyond what was declared: "
                                                              "the branch declared 3 output part(s)"));
  CHECK(outputs.allocate_saved(512) == view.saved(1));
}

TEST_CASE("unknown slots, branches, arenas and taken names are errors", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("a");
  arenas.declare_branch(slot, "x", saved_only(8));
  CHECK_THROWS_WITH(arenas.declare_slot("a"), contains_text("a slot named 'a' already exists; give every slot a name of its own"));
  CHECK_THROWS_WITH(arenas.declare_arena("a"), contains_text("an arena named 'a' already exists"));
  CHECK_THROWS_WITH(arenas.declare_slot("b", graphpool::arena_id{7}), contains_text("unknown arena 7; this allocator has 1"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot_id{3}, "y", saved_only(8)), contains_text("unknown slot 3; this allocator has 1"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "x", saved_only(8)), contains_text("slot 'a' branch 'x': the slot already has"));
  CHECK_THROWS_WITH(arenas.find_slot("zz"), contains_text("no slot named 'zz'"));
  CHECK_THROWS_WITH(arenas.find_branch(slot, "zz"), contains_text("slot 'a' has no branch named 'zz'"));
  CHECK_THROWS_WITH(arenas.view(slot, branch_id{0}), contains_text("has no address yet; call reserve() first"));
  arenas.reserve();
  CHECK_THROWS_WITH(arenas.view(slot, branch_id{1}), contains_text("slot 'a' has 1 branch(es); branch 1 is unknown"));
  CHECK_THROWS_WITH(arenas.view(slot_id{9}, branch_id{0}), contains_text("view: unknown slot 9"));
}

TEST_CASE("a slot named after a declared arena is refused as the call made, changing nothing", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const graphpool::arena_id shared = arenas.declare_arena("shared");
  // A slot's own arena takes the slot's name, so the clash is the slot's: the message names declare_slot.
  CHECK_THROWS_WITH(arenas.declare_slot("shared"),
                    contains_text("declare_slot('shared'): the slot's own arena would be named 'shared', but an arena of "
                                  "that name exists; rename the slot, or place it in that arena"));
  CHECK(arenas.statistics().arenas.size() == 1);
  const slot_id slot = arenas.declare_slot("shared", shared);
  CHECK(slot.index == 0);
  arenas.declare_branch(slot, "x", saved_only(8));
  CHECK_THROWS_WITH(arenas.declare_arena("shared"), contains_text("give every arena a name of its own"));
  arenas.reserve();
  CHECK(arenas.statistics().arenas.size() == 1);
}

TEST_CASE("declarations after reserve() are errors until release()", "[arena][errors]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("a");
  arenas.declare_branch(slot, "x", saved_only(8 * KiB));
  arenas.reserve();
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "y", saved_only(16 * KiB)),
                    contains_text("declare_branch('y'): the arenas are already reserved"));
  CHECK_THROWS_WITH(arenas.declare_slot("b"), contains_text("already reserved"));
  CHECK_THROWS_WITH(arenas.declare_arena("c"), contains_text("already reserved"));
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("already reserved; call release() first"));
  CHECK(upstream.live_bytes() == 8 * KiB);

  arenas.release();
  CHECK_FALSE(arenas.reserved());
  CHECK(upstream.live_allocations() == 0);
  arenas.declare_branch(slot, "y", saved_only(16 * KiB));
  arenas.reserve();
  CHECK(upstream.live_bytes() == 16 * KiB);
}

TEST_CASE("a slot without branches cannot be reserved", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  arenas.declare_slot("empty");
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("slot 'empty' has no branch; declare at least one branch"));
  CHECK_FALSE(arenas.reserved());
}

TEST_CASE("an upstream failure during reserve() holds nothing and names the size; reserve() can be retried",
          "[arena][errors]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  for (int i = 0; i < 4; ++i) {
    const slot_id slot = arenas.declare_slot("slot" + std::to_string(i));
    arenas.declare_branch(slot, "only", saved_only((i + 1) * KiB));
  }
  upstream.fail_at(0);
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("reserve: 4 arena(s) of 10.00 KiB (10240 bytes, 1 window(s); the largest is "
                                                    "arena 'slot3' of 4.00 KiB) could not be taken from the upstream: "
                                                    "planted upstream failure"));
  CHECK_FALSE(arenas.reserved());
  CHECK(upstream.live_allocations() == 0);

  upstream.fail_at(-1);
  arenas.reserve();
  CHECK(upstream.live_allocations() == 1);
  CHECK(upstream.live_bytes() == 10 * KiB);
  arenas.release();
  CHECK(upstream.live_allocations() == 0);
  CHECK(upstream.mismatched_frees() == 0);
}

TEST_CASE("slots at offsets inside one arena: the arena reaches the furthest branch, views add the offset",
          "[arena][offsets]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  const arena_id pool = arenas.declare_arena("pool");
  const slot_id low = arenas.declare_slot("low", pool, 0);
  const slot_id high = arenas.declare_slot("high", pool, 8 * KiB);
  const slot_id overlapping = arenas.declare_slot("overlapping", pool, 4 * KiB);  // never alive with 'low'
  arenas.declare_branch(low, "cp1", saved_only(6 * KiB));
  arenas.declare_branch(high, "cp1", saved_only(1 * KiB));
  arenas.declare_branch(high, "cp2", saved_only(3 * KiB));
  arenas.declare_branch(overlapping, "cp1", saved_only(2 * KiB));
  const arena_id unused = arenas.declare_arena("unused");  // no slot: takes nothing, leaks nothing
  static_cast<void>(unused);
  arenas.reserve();
  CHECK(upstream.live_allocations() == 1);
  CHECK(upstream.live_bytes() == 11 * KiB);
  const auto* base = static_cast<std::byte*>(arenas.view(low, branch_id{0}).base());
  CHECK(arenas.view(high, branch_id{1}).base() == base + 8 * KiB);
  CHECK(arenas.view(overlapping, branch_id{0}).saved(0) == base + 4 * KiB);
  const auto stats = arenas.statistics();
  CHECK(stats.arenas[0].bytes == 11 * KiB);
  CHECK(stats.arenas[0].largest_slot == "high");
  CHECK(stats.arenas[0].largest_branch == "cp2");
  CHECK(stats.arenas[1].bytes == 0);
  arenas.release();
  CHECK(upstream.live_allocations() == 0);

  const slot_id misaligned = arenas.declare_slot("misaligned", pool, 100);
  arenas.declare_branch(misaligned, "cp1", saved_only(1 * KiB));
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("reserve: slot 'misaligned' branch 'cp1' needs 256-byte alignment but "
                                                    "the slot sits at offset 100 of arena 'pool'; place the slot at a "
                                                    "multiple of 256"));
  CHECK(upstream.live_allocations() == 0);
}

TEST_CASE("empty names are refused, so the largest branch always sizes the arena", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  CHECK_THROWS_WITH(arenas.declare_slot(""), contains_text("declare_slot: the slot name is empty; give every slot a non-empty name"));
  CHECK_THROWS_WITH(arenas.declare_arena(""), contains_text("declare_arena: the arena name is empty"));
  const slot_id slot = arenas.declare_slot("s");
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "", saved_only(KiB)),
                    contains_text("declare_branch in slot 's': the branch name is empty; give every branch a non-empty name"));
  arenas.declare_branch(slot, "big", saved_only(1024 * KiB));
  arenas.declare_branch(slot, "small", saved_only(4 * KiB));
  arenas.reserve();
  CHECK(arenas.statistics().reserved_bytes == 1024 * KiB);
  std::memset(arenas.view(slot, branch_id{0}).saved(0), 0xab, 1024 * KiB);  // ASan: the whole largest branch fits
}

TEST_CASE("an upstream with windows gives each branch its own addresses", "[arena]") {
  windowed_resource upstream;
  {
    arena_allocator<windowed_resource> arenas(upstream);
    const auto shared = arenas.declare_arena("shared");
    const slot_id a = arenas.declare_slot("a", shared);
    const slot_id b = arenas.declare_slot("b", shared);
    for (int i = 0; i < 3; ++i) arenas.declare_branch(a, "v" + std::to_string(i), {{part(64)}, {part(100)}});
    arenas.declare_branch(b, "v0", saved_only(4 * KiB));
    arenas.reserve();
    CHECK(upstream.live_windows == 3);
    CHECK(arenas.statistics().arenas[0].windows == 3);
    CHECK(arenas.view(a, branch_id{0}).output(0) != arenas.view(a, branch_id{1}).output(0));
    CHECK(arenas.view(a, branch_id{1}).output(0) != arenas.view(a, branch_id{2}).output(0));
    // Branch 0 of every slot in the arena shares window 0.
    CHECK(arenas.view(b, branch_id{0}).base() == arenas.view(a, branch_id{0}).base());
    std::memset(arenas.view(b, branch_id{0}).saved(0), 1, 4 * KiB);  // each window holds the whole arena
    std::memset(arenas.view(a, branch_id{2}).base(), 2, 4 * KiB);
  }
  CHECK(upstream.live_windows == 0);  // the destructor released everything
}

TEST_CASE("sizes that overflow are rejected", "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("huge");
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "b", {{}, {part(max - 10), part(100)}}), contains_text("overflows size_t"));
  CHECK_THROWS_WITH(arenas.declare_branch(slot, "c", {{}, {part::group({{max - 10, 1}, {16, 1}})}}),
                    contains_text("overflows size_t"));
}

TEST_CASE("sizes too large to reserve: statistics read SIZE_MAX and reserve() fails, holding nothing",
          "[arena][errors]") {
  counting_resource upstream;
  arena_allocator<counting_resource> arenas(upstream);
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  const slot_id first = arenas.declare_slot("a1");
  const slot_id second = arenas.declare_slot("a2");
  arenas.declare_branch(first, "b", saved_only(max / 2 + 1));
  arenas.declare_branch(second, "b", saved_only(max / 2 + 1));
  arenas.declare_branch(second, "c", saved_only(max / 2 + 1));
  // Both sums wrapped to small numbers before (0 and max / 2 + 1).
  const auto stats = arenas.statistics();
  CHECK(stats.reserved_bytes == max);
  CHECK(stats.per_branch_pool_bytes == max);
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("arena 'a2': size overflows size_t"));
  CHECK(upstream.live_allocations() == 0);
  CHECK_FALSE(arenas.statistics().reserved);
}

TEST_CASE("a near-SIZE_MAX branch on the host upstream fails at reserve() rather than get a tiny block",
          "[arena][errors]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const slot_id slot = arenas.declare_slot("huge");
  arenas.declare_branch(slot, "b", saved_only(std::numeric_limits<std::size_t>::max() - 100));
  CHECK_THROWS_WITH(arenas.reserve(), contains_text("size overflows size_t"));
  CHECK_FALSE(arenas.statistics().reserved);
}

TEST_CASE("the summary keeps a whole line per arena, however long its names", "[arena]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  const std::string long_name(300, 'L');
  arenas.declare_branch(arenas.declare_slot(long_name), "b", saved_only(4 * KiB));
  arenas.declare_branch(arenas.declare_slot("short"), "b", saved_only(1 * KiB));
  const std::string summary = arenas.statistics().summary();
  CHECK(std::count(summary.begin(), summary.end(), '\n') == 4);  // heading, two arenas, totals
  CHECK_THAT(summary, contains_text(long_name + "  4.00 KiB"));
  CHECK_THAT(summary, contains_text(long_name + " / b\n"));
  CHECK_THAT(summary, contains_text("short                 1.00 KiB"));
}

TEST_CASE("lookups after reserve() are safe from many threads at once", "[arena][threads]") {
  host_resource upstream;
  arena_allocator<host_resource> arenas(upstream);
  std::vector<slot_id> slots;
  for (int s = 0; s < 8; ++s) {
    slots.push_back(arenas.declare_slot("slot" + std::to_string(s)));
    for (int b = 0; b < 4; ++b) arenas.declare_branch(slots.back(), "b" + std::to_string(b), saved_only(64 * (b + 1)));
  }
  arenas.reserve();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const slot_id slot = slots[static_cast<std::size_t>((i + t) % 8)];
        const auto a = arenas.view(slot, branch_id{static_cast<std::uint32_t>(i % 4)});
        if (a.saved(0) != arenas.view(slot, branch_id{0}).saved(0)) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(mismatches == 0);
}
