// Pipeline schedules: the generators against Megatron-LM's rules and examples, order validation,
// and the physical slot counts of DESIGN.md.

#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/schedule.hpp"

using graphpool::plan::count_slots;
using graphpool::plan::schedule;
using graphpool::testing::contains_text;

TEST_CASE("1F1B orders follow warm-up, steady pairs, cool-down", "[schedule]") {
  CHECK(schedule::one_f_one_b(2, 0, 3).order() == std::vector<int>{1, 1, -1, 1, -1, -1});
  CHECK(schedule::one_f_one_b(2, 1, 3).order() == std::vector<int>{1, -1, 1, -1, 1, -1});
  CHECK(schedule::one_f_one_b(4, 0, 2).order() == std::vector<int>{1, 1, -1, -1});  // W = min(P-r-1, M)
  CHECK(schedule::one_f_one_b(4, 1, 5).order() == std::vector<int>{1, 1, 1, -1, 1, -1, 1, -1, -1, -1});
  const schedule s = schedule::one_f_one_b(8, 3, 16);
  CHECK(s.chunks() == 1);
  CHECK(s.microbatches() == 16);
  CHECK(s.events().size() == 32);
}

TEST_CASE("the interleaved generator reproduces DESIGN.md's example order", "[schedule]") {
  const std::vector<int> expected{1, 1, 1, 2, 2, 2, -2, 1, -2, 1, -2, 2, -1, 2, -1, -1, -2, -2, -1, -1};
  const schedule s = schedule::interleaved(2, 0, 5, 2, 3);
  CHECK(s.order() == expected);
  CHECK(s.chunks() == 2);
  CHECK(schedule::parse_order("1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1").order() == expected);
  // The last rank warms up by (V-1)G only.
  CHECK(schedule::interleaved(2, 1, 2, 2, 2).order() == std::vector<int>{1, 1, 2, -2, 2, -2, -1, -1});
  // Fewer microbatches than a group: the group is cut short, and the order stays valid.
  CHECK(schedule::interleaved(8, 0, 3, 4, 8).events().size() == 24);
}

TEST_CASE("physical slots match the reference counts", "[schedule][slots]") {
  CHECK(count_slots({schedule::one_f_one_b(2, 0, 8)}) == 2);
  CHECK(count_slots({schedule::one_f_one_b(2, 1, 8)}) == 1);
  CHECK(count_slots({schedule::interleaved(2, 0, 5, 2, 3)}) == 5);
  for (int rank = 0; rank < 8; ++rank) {
    INFO("rank " << rank);
    CHECK(count_slots({schedule::interleaved(8, rank, 128, 4, 8)}) == 16);
  }
  // Over a set of schedules the peak of every one counts.
  CHECK(count_slots({schedule::one_f_one_b(4, 0, 2), schedule::one_f_one_b(4, 0, 8)}) == 4);
}

TEST_CASE("bad orders are rejected naming the entry's index and value", "[schedule][errors]") {
  CHECK_THROWS_WITH(schedule::from_entries({1, 2, -2, -1.5, -1}, 0, "o"),
                    contains_text("o: entry 3 (-1.5) is fractional: delayed weight-gradient graphs are not supported"));
  CHECK_THROWS_WITH(schedule::from_order({1, 0, -1}), contains_text("entry 1 (0) is not a chunk id"));
  CHECK_THROWS_WITH(schedule::from_order({1, -1, -1}), contains_text("entry 2 (-1) is a backward of chunk 0 (order id 1) with no pending"));
  CHECK_THROWS_WITH(schedule::from_order({-2, 2}), contains_text("entry 0 (-2) is a backward of chunk 1 (order id 2) with no pending"));
  CHECK_THROWS_WITH(schedule::from_order({1, 3, -3, -1}, 2),
                    contains_text("entry 1 (3) names chunk 2 (order id 3) but the schedule has 2 chunk(s)"));
  CHECK_THROWS_WITH(schedule::from_order({1, 1, 2, -1, -2}),
                    contains_text("chunk 0 (order id 1) has 2 forward(s) but 1 backward(s)"));
  CHECK_THROWS_WITH(schedule::from_order({}), contains_text("the order is empty"));
  CHECK_THROWS_WITH(schedule::from_order({2, -2}, 0, "o"),
                    contains_text("o: chunk 0 (order id 1) never runs, yet the largest id is 2; number the chunks from 1"));
  CHECK_THROWS_WITH(schedule::from_order({1, -1}, 2),
                    contains_text("chunk 1 (order id 2) never runs, yet the schedule has 2 chunks"));
  CHECK_THROWS_WITH(schedule::parse_order("1,3,-3,-1"), contains_text("chunk 1 (order id 2) never runs"));
  // Chunks may run different numbers of microbatches: the schedule's count is the most any runs.
  CHECK(schedule::from_order({1, 2, -2, -1, 1, -1}).microbatches() == 2);
  CHECK_THROWS_WITH(schedule::parse_order("1,,-1x"), contains_text("entry 1 ('-1x') is not a decimal integer"));
  CHECK_THROWS_WITH(schedule::parse_order("1,nan,-1"), contains_text("entry 1 ('nan') is not a decimal integer"));
  // Not a number at all: nothing about delayed weight-gradient graphs (which are fractional entries).
  CHECK_THROWS_WITH(schedule::parse_order("1,-inf"),
                    contains_text("order: entry 1 ('-inf') is not a decimal integer; write chunk ids like 1,-1,2"));
  CHECK_THROWS_WITH(schedule::from_entries({1, -1, std::numeric_limits<double>::infinity()}),
                    !contains_text("fractional"));
  CHECK_THROWS_WITH(schedule::from_entries({1, std::numeric_limits<double>::quiet_NaN(), -1}),
                    contains_text("entry 1 (nan) is not a chunk id"));
  CHECK_THROWS_WITH(schedule::parse_order("1,5000,-1"), contains_text("entry 1 (5000) names a chunk beyond 4096"));
  CHECK(schedule::parse_order(" 1, 2,-2 ,-1 ").order() == std::vector<int>{1, 2, -2, -1});
}

TEST_CASE("an order's chunk ids are decimal integers, signed or not", "[schedule][errors]") {
  // strtod took each of these as a number; a chunk id is decimal digits after an optional sign.
  CHECK_THROWS_WITH(schedule::parse_order("0x1,-1", 0, "o"),
                    contains_text("o: entry 0 ('0x1') is not a decimal integer; write chunk ids like 1,-1,2"));
  CHECK_THROWS_WITH(schedule::parse_order("1,-1e0"), contains_text("order: entry 1 ('-1e0') is not a decimal integer"));
  CHECK_THROWS_WITH(schedule::parse_order("1,1e9,-1"), contains_text("entry 1 ('1e9') is not a decimal integer"));
  CHECK_THROWS_WITH(schedule::parse_order("1,-1.0"), contains_text("entry 1 ('-1.0') is not a decimal integer"));
  for (const char* bad : {"+", "-", "+-1", "--1", "1-", "1.", ".5", "-.5", "1_0"}) {
    CHECK_THROWS_WITH(schedule::parse_order("1 " + std::string(bad) + " -1"),
                      contains_text("entry 1 ('" + std::string(bad) + "') is not a decimal integer"));
  }
  // A fraction is TransformerEngine's delayed weight-gradient entry: refused by name, not as text.
  CHECK_THROWS_WITH(schedule::parse_order("1,-1.5"), contains_text("entry 1 (-1.5) is fractional"));
  // `+c` is a forward, as Megatron-LM writes it; leading zeros are still decimal.
  CHECK(schedule::parse_order("+1,+2,-2,-1").order() == std::vector<int>{1, 2, -2, -1});
  CHECK(schedule::parse_order("01,-01").order() == std::vector<int>{1, -1});
  // Entries are separated by commas, spaces and tabs; other white space is part of an entry (strtod
  // skipped it in front of one).
  CHECK(schedule::parse_order(" 1\t,\t-1 ").order() == std::vector<int>{1, -1});
  CHECK_THROWS_WITH(schedule::parse_order("1,\n-1"), contains_text("is not a decimal integer"));
}

TEST_CASE("bad generator shapes are rejected", "[schedule][errors]") {
  CHECK_THROWS_WITH(schedule::one_f_one_b(0, 0, 4), contains_text("pipeline size 0 must be in [1, 65536]"));
  CHECK_THROWS_WITH(schedule::one_f_one_b(4, 4, 4), contains_text("rank 4 is outside [0, 4)"));
  CHECK_THROWS_WITH(schedule::one_f_one_b(4, 0, 0), contains_text("microbatches 0 must be in [1, 65536]"));
  CHECK_THROWS_WITH(schedule::interleaved(4, 0, 8, 0, 4), contains_text("vpp 0 must be in [1, 4096]"));
  CHECK_THROWS_WITH(schedule::interleaved(4, 0, 8, 2, 2), contains_text("group size 2 is smaller than the pipeline size 4"));
  // Counts whose products would overflow an int are refused before anything is built.
  CHECK_THROWS_WITH(schedule::interleaved(2, 0, 4, 4, 1 << 30), contains_text("group size 1073741824 must be in [1, 65536]"));
  CHECK_THROWS_WITH(schedule::interleaved(2, 0, 1 << 30, 4, 2), contains_text("microbatches 1073741824 must be in [1, 65536]"));
  CHECK_THROWS_WITH(schedule::one_f_one_b(1 << 20, 0, 4), contains_text("pipeline size 1048576 must be in [1, 65536]"));
}

TEST_CASE("schedules of one plan must run the same chunks", "[schedule][errors]") {
  CHECK_THROWS_WITH(count_slots({schedule::one_f_one_b(2, 0, 4), schedule::interleaved(2, 0, 4, 2, 2)}),
                    contains_text("has 2 chunk(s) but '1f1b pp=2 rank=0 microbatches=4' has 1"));
  CHECK_THROWS_WITH(count_slots({}), contains_text("no schedule given"));
}
