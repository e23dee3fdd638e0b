// graphpool-plan: plans which pipeline frames share memory, from the command line.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
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
                       an explicit order of Megatron-LM's 1-based chunk ids: +c forward,
                       -c backward of chunk c-1; every id from 1 to the largest must run
model:
  --layers L | L0,L1,...       layers per chunk (default 1); 0 = the chunk has no frames
  --branch NAME:SAVED[:GRAD]   a branch: saved bytes per layer, returned-gradient bytes per
                               (chunk, slot); sizes take B, KiB, MiB, GiB (repeatable); NAME
                               holds no ',' '=' or ':'
  --frame-bytes chunk=C,layer=L,branch=NAME,saved=SIZE
                               saved bytes of one (chunk, layer) in one branch (0-based)
  --slots N                    physical slots of the mod rule (default: the peak over the schedules)
  --slot-rule mod|schedule     which copy (slot) a microbatch replays: m mod S (default), or a map
                               per schedule chosen by the planner (fewer bytes, maybe more copies)
  --max-copies N               schedule rule: copies per chunk at most N (0 = no limit; default:
                               twice the copies of m mod S, never a footprint above its plan)
  --alignment N                round every frame up to N bytes, a power of two (default 256)
output:
  --mode coloring|offsets      arenas by coloring, or one pool with offsets (default)
  --json                       print the plan as JSON instead of the table (slot_maps: one per
                               schedule, {"microbatches": M, "map": [[copy of m] per chunk]})
  --emit te-slots              print TransformerEngine's slot tuples instead of the table; their
                               saved_arena is always the coloring's (give no --mode, or coloring)
  -h, --help                   this text

chunks are 0-based everywhere (--frame-bytes, the table, --json, te-slots, messages) except in
--order, whose ids are 1-based as Megatron-LM writes them; a message about an order names both,
e.g. chunk 0 (order id 1).

exit status:
  0  planned
  1  every flag is valid on its own, but together they cannot be planned (e.g. --slots below
     the schedules' liveness, --layers or --frame-bytes for a chunk or layer that does not exist,
     --json with --emit te-slots, --emit te-slots with --mode offsets)
  2  a flag or its value is wrong on its own (unknown flag, malformed or out-of-range value such
     as --slots 0 or --alignment 0, a bad --schedule or --order, a repeated --frame-bytes or
     --branch name, no --schedule/--order or no --branch, a flag given twice other than
     --schedule, --order, --branch and --frame-bytes)
  3  the plan (or this text) could not be written to standard output (e.g. a full disk)
)";

struct bad_flag : std::exception {
  explicit bad_flag(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

// A plan cut short by a full disk must not exit 0: a script would read half a document.
int write_stdout(const std::string& text) {
  errno = 0;
  if (std::fputs(text.c_str(), stdout) == EOF || std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    const int cause = errno;
    std::fprintf(stderr, "graphpool-plan: cannot write to standard output: %s\n",
                 cause != 0 ? std::strerror(cause) : "write error");
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace graphpool::plan;
  problem input;
  assignment mode = assignment::offsets;
  bool json = false;
  bool emit_te = false;
  bool mode_given = false;
  std::vector<std::string> given;  // flags that take effect once: a second one would silently replace the first
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag != "--schedule" && flag != "--order" && flag != "--branch" && flag != "--frame-bytes") {
        for (const std::string& earlier : given) {
          if (earlier == flag) {
            throw bad_flag(flag + " is given twice; give it once (only --schedule, --order, --branch and --frame-bytes "
                           "repeat)");
          }
        }
        given.push_back(flag);
      }
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw bad_flag(flag + " needs a value; see --help");
        return argv[++i];
      };
      if (flag == "--help" || flag == "-h") {
        return write_stdout(usage);
      } else if (flag == "--schedule") {
        for (schedule& s : parse_schedule_spec(value())) input.schedules.push_back(std::move(s));
      } else if (flag == "--order") {
        input.schedules.push_back(parse_order_spec(value()));
      } else if (flag == "--layers") {
        input.layers_per_chunk = parse_layers_spec(value());
      } else if (flag == "--branch") {
        const std::string text = value();
        branch_sizes branch = parse_branch_spec(text);
        for (const branch_sizes& earlier : input.branches) {
          if (earlier.name == branch.name) {
            throw bad_flag("--branch '" + text + "': two branches are named '" + branch.name + "'; name each once");
          }
        }
        input.branches.push_back(std::move(branch));
      } else if (flag == "--frame-bytes") {
        const std::string text = value();
        saved_bytes_override o = parse_frame_bytes_spec(text);
        for (const saved_bytes_override& earlier : input.overrides) {
          if (earlier.chunk == o.chunk && earlier.layer == o.layer && earlier.branch == o.branch) {
            throw bad_flag("--frame-bytes '" + text + "': chunk " + std::to_string(o.chunk) + " layer " +
                           std::to_string(o.layer) + " of branch '" + o.branch + "' already has saved bytes; give each once");
          }
        }
        input.overrides.push_back(std::move(o));
      } else if (flag == "--slots") {
        input.slots = static_cast<int>(graphpool::plan::detail::parse_integer(value(), "--slots", 1, 1 << 16));
      } else if (flag == "--slot-rule") {
        const std::string rule = value();
        if (rule != "mod" && rule != "schedule") throw bad_flag("--slot-rule '" + rule + "': use mod or schedule");
        input.rule = rule == "mod" ? slot_rule::mod : slot_rule::schedule;
      } else if (flag == "--max-copies") {
        input.max_copies = static_cast<int>(graphpool::plan::detail::parse_integer(value(), "--max-copies", 0, 1 << 16));
      } else if (flag == "--alignment") {
        const std::string text = value();
        input.alignment = parse_frame_size(text, "--alignment " + text);
        if (!graphpool::is_valid_alignment(input.alignment)) {
          throw bad_flag("--alignment " + text + ": the alignment must be a power of two (1, 2, 4, ..., e.g. 256)");
        }
      } else if (flag == "--mode") {
        const std::string m = value();
        if (m != "coloring" && m != "offsets") throw bad_flag("--mode '" + m + "': use coloring or offsets");
        mode = m == "coloring" ? assignment::coloring : assignment::offsets;
        mode_given = true;
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
    // Flags each valid on their own that clash. The planner names the fields of `problem`; here the
    // flags that set them.
    if (json && emit_te) throw graphpool::error("--json and --emit te-slots each print a whole document; give one");
    if (emit_te && mode_given && mode != assignment::coloring) {
      throw graphpool::error("--emit te-slots always uses the coloring (TransformerEngine's saved_arena is a color); "
                             "drop --mode " + std::string(to_string(mode)));
    }
    if (input.rule == slot_rule::mod && input.max_copies != twice_modulo_copies) {
      throw graphpool::error("--max-copies " + std::to_string(input.max_copies) +
                             " applies to --slot-rule schedule; add it, or give --slots for the default rule (mod)");
    }
    if (input.rule == slot_rule::schedule && input.slots != 0) {
      throw graphpool::error("--slots " + std::to_string(input.slots) +
                             " applies to --slot-rule mod; with --slot-rule schedule give --max-copies instead");
    }
    const plan result = make_plan(input, mode);
    if (json) return write_stdout(to_json(result));
    if (emit_te) return write_stdout(te_slots_text(te_slots(result)));
    return write_stdout(summary_table(result));
  } catch (const graphpool::error& e) {
    std::fprintf(stderr, "graphpool-plan: %s\n", e.what());
    return 1;
  }
}
