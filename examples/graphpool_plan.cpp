// graphpool-plan: plans which pipeline frames share memory, from the command line.

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "graphpool/plan/planner.hpp"
#include "graphpool/plan/report.hpp"
#include "graphpool/plan/spec.hpp"

namespace {

constexpr const char* usage = R"(usage: graphpool-plan [options]

Plans the memory of pipeline frames (chunk, slot, layer) whose branches (variants) share it:
frames that are never alive together in any schedule may share bytes.

schedules (at least one; every one that will be replayed):
  --schedule pp=P,rank=R,microbatches=M[,vpp=V,group=G]
                       1F1B, or interleaved when vpp > 1 (group defaults to pp);
                       microbatches=4..64 takes every count, 4..64:4 every 4th
  --order "1,1,-1,2,-2,-1"
                       an explicit order: +c forward, -c backward of chunk c (1-based)
model:
  --layers L | L0,L1,...       layers per chunk (default 1); 0 = the chunk has no frames
  --branch NAME:SAVED[:GRAD]   a branch: saved bytes per layer, returned-gradient bytes per
                               (chunk, slot); sizes take B, KiB, MiB, GiB (repeatable)
  --frame-bytes chunk=C,layer=L,branch=NAME,saved=SIZE
                               saved bytes of one (chunk, layer) in one branch (0-based)
  --slots N                    physical slots of the mod rule (default: the peak over the schedules)
  --slot-rule mod|schedule     which copy (slot) a microbatch replays: m mod S (default), or a map
                               per schedule chosen by the planner (fewer bytes, maybe more copies)
  --max-copies N               schedule rule: copies per chunk at most N (0 = no limit; default:
                               twice the copies of m mod S, never a footprint above its plan)
  --alignment N                round every frame up to N bytes (default 256)
output:
  --mode coloring|offsets      arenas by coloring, or one pool with offsets (default)
  --json                       print the plan as JSON instead of the table (slot_maps: one per
                               schedule, {"microbatches": M, "map": [[copy of m] per chunk]})
  --emit te-slots              print TransformerEngine's slot tuples instead of the table
  --help                       this text

exit status: 0 planned, 1 the input cannot be planned, 2 bad flags
)";

struct bad_flag : std::exception {
  explicit bad_flag(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace graphpool::plan;
  problem input;
  assignment mode = assignment::offsets;
  bool json = false;
  bool emit_te = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw bad_flag(flag + " needs a value; see --help");
        return argv[++i];
      };
      if (flag == "--help" || flag == "-h") {
        std::fputs(usage, stdout);
        return 0;
      } else if (flag == "--schedule") {
        for (schedule& s : parse_schedule_spec(value())) input.schedules.push_back(std::move(s));
      } else if (flag == "--order") {
        const std::string text = value();
        input.schedules.push_back(schedule::parse_order(text, 0, "--order " + text));
      } else if (flag == "--layers") {
        input.layers_per_chunk = parse_layers_spec(value());
      } else if (flag == "--branch") {
        input.branches.push_back(parse_branch_spec(value()));
      } else if (flag == "--frame-bytes") {
        input.overrides.push_back(parse_frame_bytes_spec(value()));
      } else if (flag == "--slots") {
        input.slots = static_cast<int>(graphpool::plan::detail::parse_integer(value(), "--slots", 1, 1 << 16));
      } else if (flag == "--slot-rule") {
        const std::string rule = value();
        if (rule != "mod" && rule != "schedule") throw bad_flag("--slot-rule '" + rule + "': use mod or schedule");
        input.rule = rule == "mod" ? slot_rule::mod : slot_rule::schedule;
      } else if (flag == "--max-copies") {
        input.max_copies = static_cast<int>(graphpool::plan::detail::parse_integer(value(), "--max-copies", 0, 1 << 16));
      } else if (flag == "--alignment") {
        input.alignment = parse_size(value());
      } else if (flag == "--mode") {
        const std::string m = value();
        if (m != "coloring" && m != "offsets") throw bad_flag("--mode '" + m + "': use coloring or offsets");
        mode = m == "coloring" ? assignment::coloring : assignment::offsets;
      } else if (flag == "--json") {
        json = true;
      } else if (flag == "--emit") {
        const std::string what = value();
        if (what != "te-slots") throw bad_flag("--emit '" + what + "': the only output to emit is te-slots");
        emit_te = true;
      } else {
        throw bad_flag("unknown flag '" + flag + "'; see --help");
      }
    }
    if (json && emit_te) throw bad_flag("--json and --emit te-slots each print a whole document; give one");
    if (input.schedules.empty()) throw bad_flag("no schedule: give --schedule or --order; see --help");
    if (input.branches.empty()) throw bad_flag("no branch: give --branch NAME:SAVED[:GRAD]; see --help");
    if (input.layers_per_chunk.empty()) input.layers_per_chunk = {1};
  } catch (const bad_flag& e) {
    std::fprintf(stderr, "graphpool-plan: %s\n", e.what());
    return 2;
  } catch (const graphpool::error& e) {
    std::fprintf(stderr, "graphpool-plan: %s\n", e.what());
    return 2;
  }
  try {
    const plan result = make_plan(input, mode);
    if (json) {
      std::fputs(to_json(result).c_str(), stdout);
    } else if (emit_te) {
      std::fputs(te_slots_text(te_slots(result)).c_str(), stdout);
    } else {
      std::fputs(summary_table(result).c_str(), stdout);
    }
    return 0;
  } catch (const graphpool::error& e) {
    std::fprintf(stderr, "graphpool-plan: %s\n", e.what());
    return 1;
  }
}
