// The PyTorch plug-in's bookkeeping (bindings/torch_plugin.hpp, segment_pool) with a stand-in arena:
// which window a segment comes from, what a frame holds physically, giving segments back, and errors.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/capture/segment_pool.hpp"
#include "graphpool/error.hpp"
#include "torch_plugin.hpp"

using graphpool::branch_id;
using graphpool::chunk_id;
using graphpool::segment_source;
using graphpool::slot_id;
using graphpool::testing::contains_text;

namespace {

constexpr std::size_t granule = std::size_t{2} << 20;

struct stand_in_block {
  std::size_t size;
  [[nodiscard]] std::size_t bytes() const { return size; }
};

// Address windows that are never dereferenced: each arena a distinct range, each window a distinct part.
struct stand_in_arena {
  using block_type = stand_in_block;

  static inline std::uintptr_t next_base = std::uintptr_t{1} << 40;
  static inline bool fail_next_ensure = false;

  stand_in_arena(std::size_t windows, std::size_t capacity) : windows_(windows), stride_(capacity + granule) {
    base_ = next_base;
    next_base += stride_ * windows + granule;
  }
  void ensure(std::size_t bytes) {
    if (fail_next_ensure) {
      fail_next_ensure = false;
      throw graphpool::error("stand-in: out of device memory");
    }
    mapped_ = std::max(mapped_, graphpool::align_up(bytes, granule));
  }
  [[nodiscard]] void* window(std::size_t index) const {
    REQUIRE(index < windows_);
    return reinterpret_cast<void*>(base_ + index * stride_);
  }
  [[nodiscard]] std::size_t physical_bytes() const { return mapped_; }
  void remap(const std::vector<std::vector<graphpool::basic_page_run<stand_in_block>>>& runs) {
    REQUIRE(runs.size() == windows_);
    runs_ = runs;
    mapped_ = 0;
  }
  std::vector<std::vector<graphpool::basic_page_run<stand_in_block>>> runs_;

  std::size_t windows_;
  std::size_t stride_;
  std::uintptr_t base_ = 0;
  std::size_t mapped_ = 0;
};

using plugin = graphpool::bindings::torch_plugin<stand_in_arena>;

std::unique_ptr<plugin> make_plugin(const std::vector<std::string>& schedules, std::size_t capacity = std::size_t{1} << 34) {
  return std::make_unique<plugin>(
      0, std::vector<std::string>{"cp1", "cp2", "cp4"}, graphpool::bindings::parse_schedules(schedules), capacity, granule,
      [](std::size_t windows, std::size_t window_capacity) { return std::make_unique<stand_in_arena>(windows, window_capacity); },
      [](std::size_t bytes) { return std::make_shared<const stand_in_block>(stand_in_block{bytes}); });
}

segment_source at(std::uint32_t chunk, std::uint32_t slot, std::uint32_t branch) {
  return {chunk_id{chunk}, slot_id{slot}, branch_id{branch}};
}

std::uintptr_t address(void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

TEST_CASE("torch plug-in: slots and slot maps come from the schedules", "[torch]") {
  CHECK(make_plugin({"order=1,-1"})->pool().slots() == 1);
  const auto two = make_plugin({"order=1,1,-1,-1"});
  CHECK(two->first_microbatches() == 2);
  CHECK(two->pool().chunks() == 1);
  CHECK(two->pool().slots() == 2);
  CHECK(two->slot_of(2, 0, 0) != two->slot_of(2, 0, 1));

  const auto pipeline = make_plugin({"pp=4,rank=0,microbatches=8,vpp=2", "pp=4,rank=0,microbatches=12,vpp=2"});
  CHECK(pipeline->first_microbatches() == 8);
  CHECK(pipeline->pool().chunks() == 2);
  const int slots = pipeline->pool().slots();
  CHECK(slots > 1);
  for (int chunk = 0; chunk < 2; ++chunk) {
    for (int m = 0; m < 8; ++m) CHECK(pipeline->slot_of(8, chunk, m) == m % slots);
  }
  CHECK_THROWS_WITH(pipeline->slot_of(6, 0, 0), contains_text("no slot map for a schedule of 6"));
  CHECK_THROWS_WITH(pipeline->slot_of(8, 2, 0), contains_text("chunk 2 is out of range"));
  CHECK_THROWS_WITH(pipeline->slot_of(8, 0, 8), contains_text("microbatch 8 is out of range"));
}

TEST_CASE("torch plug-in: bad schedules and branches are refused, naming them", "[torch]") {
  CHECK_THROWS_WITH(make_plugin({}), contains_text("no schedule given"));
  // Named as the caller wrote them, not as graphpool-plan's flags.
  CHECK_THROWS_WITH(make_plugin({"pp=4,microbatches=8"}),
                    contains_text("schedule 'pp=4,microbatches=8': pp, rank and microbatches are required"));
  CHECK_THROWS_WITH(make_plugin({"order=1,-1", "order=1,2,-2,-1"}), contains_text("every schedule must have the same chunks"));
  CHECK_THROWS_WITH(make_plugin({"order=1,,-1"}), contains_text("schedule order '1,,-1': entry 1 is empty"));
  CHECK_THROWS_WITH(make_plugin({"order=1,1,-1"}), contains_text("schedule order '1,1,-1': chunk 0 (order id 1) has 2 forward(s)"));
  for (const char* spec : {"pp=4,microbatches=8", "order=1,,-1", "order=1,1,-1"}) {
    CHECK_THROWS_WITH(make_plugin({spec}), !contains_text("--"));
  }
  const auto make = [](std::vector<std::string> branches) {
    return plugin(
        0, std::move(branches), graphpool::bindings::parse_schedules({"order=1,-1"}), granule, granule,
        [](std::size_t w, std::size_t c) { return std::make_unique<stand_in_arena>(w, c); },
        [](std::size_t bytes) { return std::make_shared<const stand_in_block>(stand_in_block{bytes}); });
  };
  CHECK_THROWS_WITH(make({}), contains_text("no branch given"));
  CHECK_THROWS_WITH(make({"a", "a"}), contains_text("'a' is given twice"));
  CHECK_THROWS_WITH(make({"a", ""}), contains_text("branch 1 has an empty name"));
}

TEST_CASE("torch plug-in: segments come from the selected branch's window; a frame holds its largest branch", "[torch]") {
  const auto p = make_plugin({"order=1,1,-1,-1"});
  auto& pool = p->pool();
  CHECK_THROWS_WITH(pool.allocate(1024), contains_text("no frame selected"));

  pool.select(at(0, 0, 0));
  void* a = pool.allocate(20u << 20);
  void* b = pool.allocate(1000);
  void* c = pool.allocate(2u << 20);
  CHECK(address(b) == address(a) + (20u << 20));
  CHECK(address(c) % graphpool::segment_pool<stand_in_arena>::segment_alignment == 0);
  CHECK(address(c) >= address(b) + 1000);
  CHECK(pool.allocate(0) == nullptr);
  const std::size_t used0 = pool.used_bytes(at(0, 0, 0));
  CHECK(used0 == address(c) + (2u << 20) - address(a));

  pool.select(at(0, 0, 1));
  void* d = pool.allocate(30u << 20);
  CHECK(address(d) != address(a));  // distinct windows: PyTorch keys its blocks by pointer
  CHECK(pool.frame_physical_bytes(chunk_id{0}, slot_id{0}) == graphpool::align_up(30u << 20, granule));
  CHECK(pool.physical_bytes() == graphpool::align_up(30u << 20, granule));

  pool.select(at(0, 1, 2));
  void* e = pool.allocate(10u << 20);
  CHECK(pool.frame_physical_bytes(chunk_id{0}, slot_id{1}) == (10u << 20));
  CHECK(pool.physical_bytes() == (30u << 20) + (10u << 20));  // two slots in flight: two frames

  std::set<std::uintptr_t> addresses{address(a), address(b), address(c), address(d), address(e)};
  CHECK(addresses.size() == 5);
  CHECK(pool.live_segments() == 5);

  // The plan over the measured sizes: both microbatches are alive at once, so two of the largest frame.
  std::size_t largest = 0;
  for (std::uint32_t branch = 0; branch < 3; ++branch) largest = std::max(largest, pool.used_bytes(at(0, 0, branch)));
  const auto planned = p->current_footprint();
  CHECK(planned.planned == 2 * graphpool::align_up(largest, granule));
  CHECK(planned.live_bound == planned.planned);
  CHECK(planned.scratch == 0);
}

TEST_CASE("torch plug-in: giving segments back restarts a branch's window; foreign pointers are refused", "[torch]") {
  const auto p = make_plugin({"order=1,-1"});
  auto& pool = p->pool();
  pool.select(at(0, 0, 1));
  void* a = pool.allocate(4u << 20);
  void* b = pool.allocate(4u << 20);
  CHECK(pool.deallocate(a));
  CHECK_FALSE(pool.deallocate(a));  // twice
  int local = 0;
  CHECK_FALSE(pool.deallocate(&local));
  CHECK(pool.used_bytes(at(0, 0, 1)) == (8u << 20));  // b is still held
  CHECK(pool.deallocate(b));
  CHECK(pool.used_bytes(at(0, 0, 1)) == 0);
  CHECK(pool.live_segments() == 0);
  void* again = pool.allocate(4u << 20);
  CHECK(again == a);  // a failed capture's branch captures again from the start
  CHECK(pool.physical_bytes() == (8u << 20));  // physical memory stays mapped
  CHECK(pool.deallocate(again));
}

TEST_CASE("torch plug-in: out-of-range sources, full windows and device errors leave nothing taken", "[torch]") {
  const auto p = make_plugin({"order=1,-1"}, 64u << 20);
  auto& pool = p->pool();
  CHECK_THROWS_WITH(pool.select(at(1, 0, 0)), contains_text("chunk 1 is out of range; there are 1"));
  CHECK_THROWS_WITH(pool.select(at(0, 1, 0)), contains_text("slot 1 is out of range"));
  CHECK_THROWS_WITH(pool.select(at(0, 0, 3)), contains_text("branch 3 is out of range; there are 3"));
  CHECK_FALSE(pool.selected().has_value());

  pool.select(at(0, 0, 2));
  void* a = pool.allocate(40u << 20);
  CHECK_THROWS_WITH(pool.allocate(40u << 20), contains_text("chunk 0, slot 0, branch 2 (cp4) needs 80.00 MiB"));
  stand_in_arena::fail_next_ensure = true;
  CHECK_THROWS_WITH(pool.allocate(2u << 20), contains_text("out of device memory"));
  CHECK(pool.live_segments() == 1);
  CHECK(pool.used_bytes(at(0, 0, 2)) == (40u << 20));
  pool.deselect();
  CHECK_THROWS_WITH(pool.allocate(1), contains_text("no frame selected"));
  CHECK(pool.deallocate(a));
}

TEST_CASE("torch plug-in: lay-out maps persistent pages to planned frames and the rest to one shared scratch", "[torch]") {
  const auto p = make_plugin({"order=1,1,-1,-1"});
  auto& pool = p->pool();
  // Slot 0, branch 0: five pages; a saved tensor in page 1 and one across pages 3 and 4.
  pool.select(at(0, 0, 0));
  auto* a = static_cast<std::byte*>(pool.allocate(5 * granule));
  CHECK(pool.add_persistent(at(0, 0, 0), a + granule + 100, 1000));
  CHECK(pool.add_persistent(at(0, 0, 0), a + 4 * granule - 10, 20));
  CHECK_FALSE(pool.add_persistent(at(0, 0, 1), a, 10));        // not that source's segment
  CHECK_FALSE(pool.add_persistent(at(0, 0, 0), a + 6 * granule, 10));  // outside every segment
  CHECK(pool.persistent_pages(at(0, 0, 0)) == 3);
  CHECK(pool.transient_pages(at(0, 0, 0)) == 2);
  // Branch 1 of slot 0: two pages, both persistent. Slot 1, branch 2: four pages, one persistent.
  pool.select(at(0, 0, 1));
  auto* b = static_cast<std::byte*>(pool.allocate(2 * granule));
  CHECK(pool.add_persistent(at(0, 0, 1), b, 2 * granule));
  pool.select(at(0, 1, 2));
  auto* c = static_cast<std::byte*>(pool.allocate(4 * granule));
  CHECK(pool.add_persistent(at(0, 1, 2), c + 2 * granule, 1));

  CHECK_THROWS_WITH(p->frame_range(0, 0), contains_text("not laid out yet; lay them out after the captures (graphpool_torch_lay_out)"));
  const auto footprint = p->lay_out();
  const auto first = p->frame_range(0, 0);
  const auto second = p->frame_range(0, 1);
  CHECK(first.second == 3 * granule);
  CHECK(second.second == 3 * granule);
  CHECK((first.first + first.second <= second.first || second.first + second.second <= first.first));  // alive together
  CHECK_THROWS_WITH(p->frame_range(0, 2), contains_text("chunk 0, slot 2 is out of range"));
  CHECK(footprint.scratch == 3 * granule);                 // slot 1 branch 2 has the most transient pages
  // Every slot captures the same graphs, so the plan sizes each slot's frame by the chunk's largest branch
  // over the slots (3 pages); both microbatches are alive at once: 2 frames, plus the scratch.
  CHECK(footprint.planned == 2 * 3 * granule + 3 * granule);
  CHECK(footprint.live_bound == footprint.planned);
  CHECK(pool.physical_bytes() == footprint.planned);
  CHECK_THROWS_WITH(pool.select(at(0, 0, 0)), contains_text("laid out already"));

  // The segments stay PyTorch's; giving them back after lay-out changes no mapping.
  CHECK(pool.deallocate(a));
  CHECK(pool.deallocate(b));
  CHECK(pool.deallocate(c));
}

TEST_CASE("segment pool: a lay-out that does not fit its block changes no window and may be given again", "[torch][errors]") {
  std::vector<stand_in_arena*> arenas;
  graphpool::segment_pool<stand_in_arena> pool(
      [&](std::size_t windows, std::size_t capacity) {
        auto arena = std::make_unique<stand_in_arena>(windows, capacity);
        arenas.push_back(arena.get());
        return arena;
      },
      [](std::size_t bytes) { return std::make_shared<const stand_in_block>(stand_in_block{bytes}); }, 1, 2,
      {"cp1", "cp2"}, std::size_t{1} << 34, granule);
  pool.select(at(0, 0, 0));
  auto* a = static_cast<std::byte*>(pool.allocate(granule));
  CHECK(pool.add_persistent(at(0, 0, 0), a, 1));
  pool.select(at(0, 1, 1));
  auto* b = static_cast<std::byte*>(pool.allocate(2 * granule));
  CHECK(pool.add_persistent(at(0, 1, 1), b, 2 * granule));
  REQUIRE(arenas.size() == 2);

  CHECK_THROWS_WITH(pool.lay_out({0}, 3 * granule), contains_text("1 offsets for 2 frames; give one offset per (chunk, slot)"));
  // Slot 1's two persistent pages from page 2 of a 3-page block run past its end: refused before slot 0 is remapped.
  CHECK_THROWS_WITH(pool.lay_out({0, 2 * granule}, 3 * granule),
                    contains_text("frame 1 (chunk 0, slot 1) (cp2): 2 persistent page(s) from offset"));
  CHECK(arenas[0]->runs_.empty());
  CHECK(arenas[1]->runs_.empty());
  CHECK_FALSE(pool.laid_out());
  CHECK(pool.physical_bytes() == 3 * granule);  // the frames' own pages, no block

  pool.lay_out({0, granule}, 3 * granule);
  CHECK(pool.laid_out());
  CHECK(arenas[0]->runs_.size() == 2);
  CHECK(arenas[1]->runs_.size() == 2);
  CHECK(pool.deallocate(a));
  CHECK(pool.deallocate(b));
}

TEST_CASE("liveness runs: persistent pages packed from the frame's offset, the rest packed on the scratch", "[torch]") {
  const auto persistent = std::make_shared<const stand_in_block>(stand_in_block{10 * granule});
  const auto scratch = std::make_shared<const stand_in_block>(stand_in_block{4 * granule});
  // Pages 0..5 used; 1, 3 and 4 persistent: runs 0→scratch 0, 1→frame+0, 2→scratch 1, 3..4→frame+1..2, 5→scratch 2.
  const auto runs = graphpool::liveness_runs<stand_in_block>(6, {1, 3, 4}, persistent, 4 * granule, scratch, granule, "w");
  REQUIRE(runs.size() == 5);
  const std::vector<std::size_t> window{0, 1, 2, 3, 5};
  const std::vector<const stand_in_block*> blocks{scratch.get(), persistent.get(), scratch.get(), persistent.get(), scratch.get()};
  const std::vector<std::size_t> offset{0, 4, 1, 5, 2};
  const std::vector<std::size_t> pages{1, 1, 1, 2, 1};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CHECK(runs[i].window_offset == window[i] * granule);
    CHECK(runs[i].block.get() == blocks[i]);
    CHECK(runs[i].block_offset == offset[i] * granule);
    CHECK(runs[i].bytes == pages[i] * granule);
  }
  CHECK_THROWS_WITH(graphpool::liveness_runs<stand_in_block>(6, {1, 3, 4}, persistent, 8 * granule, scratch, granule, "frame 3"),
                    contains_text("frame 3: 3 persistent page(s) from offset"));
}
