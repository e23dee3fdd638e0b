// Planner input as text: sizes, schedule specs, branches, overrides, layers.

#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/spec.hpp"

using namespace graphpool::plan;
using graphpool::testing::contains_text;

TEST_CASE("sizes take B, KiB, MiB and GiB", "[spec]") {
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("17B") == 17);
  CHECK(parse_size("2KiB") == 2048);
  CHECK(parse_size("64MiB") == 64u << 20);
  CHECK(parse_size("1.5GiB") == 3u << 29);
  for (const char* bad : {"", "MiB", "64MB", "-1", "1.5", "0.1KiB", "1e3", "64 MiB", "9999999GiB"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_size(bad), graphpool::error);
  }
  CHECK_THROWS_WITH(parse_size("64MB"), contains_text("size '64MB' is not a number with an optional unit"));
}

TEST_CASE("sizes given to a flag name the flag, and stop at the 1 TiB a frame may hold", "[spec]") {
  CHECK(parse_frame_size("1024GiB", "--x") == std::size_t{1} << 40);
  CHECK_THROWS_WITH(parse_frame_size("1025GiB", "--x"),
                    contains_text("--x: 1025GiB is more than the 1 TiB (1099511627776 bytes) one frame may hold"));
  CHECK_THROWS_WITH(parse_branch_spec("a:1XB"), contains_text("--branch 'a:1XB' saved bytes: size '1XB' is not a number"));
  CHECK_THROWS_WITH(parse_branch_spec("a:1MiB:2048GiB"),
                    contains_text("--branch 'a:1MiB:2048GiB' gradient bytes: 2048GiB is more than the 1 TiB"));
  CHECK_THROWS_WITH(parse_frame_bytes_spec("chunk=0,layer=0,branch=a,saved=64MB"),
                    contains_text("--frame-bytes 'chunk=0,layer=0,branch=a,saved=64MB' saved: size '64MB' is not a number"));
}

TEST_CASE("schedule specs expand microbatch ranges", "[spec]") {
  CHECK(parse_schedule_spec("pp=2,rank=0,microbatches=8").size() == 1);
  const auto range = parse_schedule_spec("pp=4,rank=1,microbatches=4..64:4,vpp=2,group=4");
  REQUIRE(range.size() == 16);
  CHECK(range.front().microbatches() == 4);
  CHECK(range.back().microbatches() == 64);
  CHECK(range.front().chunks() == 2);
  CHECK(parse_schedule_spec("pp=2,rank=1,microbatches=1..5").size() == 5);
  CHECK(parse_schedule_spec("pp=2,rank=0,microbatches=3,vpp=2").front().order() ==
        schedule::interleaved(2, 0, 3, 2, 2).order());
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank=0"), contains_text("pp, rank and microbatches are required"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank=0,microbatches=8..4"), contains_text("range 8..4 is empty"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank=0,microbatches=4,tp=2"), contains_text("unknown key 'tp'"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=x,rank=0,microbatches=4"), contains_text("pp: 'x' is not an integer"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank=2,microbatches=4"),
                    contains_text("--schedule 'pp=2,rank=2,microbatches=4': schedule: rank 2 is outside [0, 2)"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2;rank=0"), contains_text("pp: '2;rank=0' is not an integer"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=2,rank"), contains_text("'rank' is not key=value"));
}

TEST_CASE("branch, override and layer specs", "[spec]") {
  const branch_sizes b = parse_branch_spec("cp2:32MiB:8MiB");
  CHECK(b.name == "cp2");
  CHECK(b.saved_per_layer == 32u << 20);
  CHECK(b.grad_per_slot == 8u << 20);
  CHECK(parse_branch_spec("cp1:1KiB").grad_per_slot == 0);
  CHECK_THROWS_WITH(parse_branch_spec("cp1"), contains_text("write NAME:SAVED[:GRAD]"));
  CHECK_THROWS_WITH(parse_branch_spec(":1MiB"), contains_text("write NAME:SAVED[:GRAD]"));
  const saved_bytes_override o = parse_frame_bytes_spec("chunk=1,layer=2,branch=cp2,saved=40MiB");
  CHECK(o.chunk == 1);
  CHECK(o.layer == 2);
  CHECK(o.branch == "cp2");
  CHECK(o.saved == 40u << 20);
  CHECK_THROWS_WITH(parse_frame_bytes_spec("chunk=1,layer=2,saved=1"),
                    contains_text("chunk, layer, branch and saved are required; branch is missing or empty"));
  CHECK_THROWS_WITH(parse_frame_bytes_spec("chunk=1,layer=2,branch=,saved=1"), contains_text("; branch is missing or empty"));
  CHECK_THROWS_WITH(parse_frame_bytes_spec("branch=a"), contains_text("; chunk, layer, saved are missing or empty"));
  CHECK(parse_layers_spec("3") == std::vector<int>{3});
  CHECK(parse_layers_spec("0,2,3") == std::vector<int>{0, 2, 3});
  CHECK_THROWS_WITH(parse_layers_spec("2,,3"), contains_text("'' is not an integer"));
  CHECK_THROWS_WITH(parse_branch_spec("a,b:1MiB"),
                    contains_text("--branch 'a,b:1MiB': the name 'a,b' holds ',' or '=', so --frame-bytes could not name it"));
  CHECK_THROWS_WITH(parse_branch_spec("a=b:1MiB"), contains_text("the name 'a=b' holds ',' or '='"));
}

TEST_CASE("an integer past long long is out of range, not 'not an integer'", "[spec]") {
  CHECK_THROWS_WITH(parse_schedule_spec("pp=99999999999999999999,rank=0,microbatches=4"),
                    contains_text("pp: 99999999999999999999 is outside ["));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=4,rank=-99999999999999999999,microbatches=4"),
                    contains_text("rank: -99999999999999999999 is outside ["));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=4x,rank=0,microbatches=4"), contains_text("'4x' is not an integer"));
}

TEST_CASE("specs reject a key given twice, and group without vpp", "[spec]") {
  CHECK_THROWS_WITH(parse_schedule_spec("pp=4,pp=2,rank=0,microbatches=4"),
                    contains_text("--schedule 'pp=4,pp=2,rank=0,microbatches=4': key 'pp' is given twice"));
  CHECK_THROWS_WITH(parse_frame_bytes_spec("chunk=0,layer=0,branch=a,saved=1,saved=2"),
                    contains_text("key 'saved' is given twice"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=4,rank=0,microbatches=8,group=4"),
                    contains_text("group applies to interleaved schedules only; give vpp=V with V > 1"));
  CHECK_THROWS_WITH(parse_schedule_spec("pp=4,rank=0,microbatches=8,vpp=1,group=4"),
                    contains_text("group applies to interleaved schedules only"));
  CHECK(parse_schedule_spec("pp=4,rank=0,microbatches=8,vpp=2,group=4").size() == 1);
}

TEST_CASE("orders from the command line: no empty entry, every chunk runs", "[spec]") {
  CHECK(parse_order_spec("1,1,-1,2,-2,-1").order() == std::vector<int>{1, 1, -1, 2, -2, -1});
  CHECK(parse_order_spec("1 2 -2 -1").order() == std::vector<int>{1, 2, -2, -1});
  CHECK(parse_order_spec(" 1, -1 ").order() == std::vector<int>{1, -1});
  CHECK_THROWS_WITH(parse_order_spec("1,-1,"),
                    contains_text("--order '1,-1,': entry 2 is empty, after the last entry (a trailing comma)"));
  CHECK_THROWS_WITH(parse_order_spec("1 1,,-1 -1"), contains_text("entry 2 is empty, between two commas"));
  CHECK_THROWS_WITH(parse_order_spec(",1,-1"), contains_text("entry 0 is empty, before the first entry"));
  CHECK_THROWS_WITH(parse_order_spec("1,-1, "), contains_text("entry 2 is empty, after the last entry"));
  CHECK_THROWS_WITH(parse_order_spec(""), contains_text("--order '': the order is empty; give each chunk's forwards"));
  CHECK_THROWS_WITH(parse_order_spec(" "), contains_text("the order is empty"));
  CHECK_THROWS_WITH(parse_order_spec("2,-2"),
                    contains_text("--order '2,-2': chunk 0 (order id 1) never runs, yet the largest id is 2"));
  // Every message calls the text as parse_schedule_spec's do, `name 'text'`; the schedule itself is named
  // `name text` (the planner's messages quote it).
  CHECK_THROWS_WITH(parse_order_spec("1,x,-1"),
                    contains_text("--order '1,x,-1': entry 1 ('x') is not a decimal integer"));
  CHECK_THROWS_WITH(parse_order_spec("1,inf,-1", "schedule order"),
                    contains_text("schedule order '1,inf,-1': entry 1 ('inf') is not a decimal integer"));
  // Chunk ids are decimal integers: no hex, no exponent; `+c` is a forward, spaces separate entries.
  CHECK_THROWS_WITH(parse_order_spec("0x1,-1"), contains_text("--order '0x1,-1': entry 0 ('0x1') is not a decimal "
                                                              "integer; write chunk ids like 1,-1,2"));
  CHECK_THROWS_WITH(parse_order_spec("1 1e0,-1 -1"),
                    contains_text("--order '1 1e0,-1 -1': entry 1 ('1e0') is not a decimal integer"));
  CHECK(parse_order_spec("+1,-1").order() == std::vector<int>{1, -1});
  CHECK(parse_order_spec(" 1,\t-1").order() == std::vector<int>{1, -1});
  CHECK(parse_order_spec("1,-1").name() == "--order 1,-1");
  CHECK_THROWS_WITH(parse_order_spec("1,3,-3,-1"), contains_text("chunk 1 (order id 2) never runs"));
  CHECK_THROWS_WITH(parse_order_spec("1,1,-1"), contains_text("chunk 0 (order id 1) has 2 forward(s) but 1 backward(s)"));
}
