// Planner quality over a corpus of pipeline schedules: footprint / lower bound for the offsets and
// coloring modes, the naive sum (a pool per branch) / lower bound, and planning time; and the two
// slot rules side by side (m mod S against maps chosen from the schedule, with the default copies
// budget and with none): footprint / live bound, copies per chunk, planning time.
//
// usage: graphpool_bench_planner_quality [--json PATH] [--quick | --random-sizes SEED:COUNT] [--threads N]
//                                        [--misses PATH [--misses-above RATIO]] [--only TEXT]
// --only keeps the corpus cases whose name contains TEXT (to time or inspect a few).
// --random-sizes replaces the corpus with COUNT single schedules whose every (chunk, layer) saves a random
// size (the corpus's unequal frames follow one fixed pattern; a user's do not): PP 2/4/8, a random rank, VPP 1/2/4,
// M 24/64/128, 1-3 layers per chunk, 16-320 MiB per frame, drawn from SEED (the same cases on any machine).
// --misses writes the cases the schedule rule (no copy limit) misses issue 8's targets on, each schedule
// as rectangles (lifetime x bytes per frame), for benchmarks/slot_rule_optimum.py to solve exactly;
// with --misses-above, every case planned above RATIO x its live bound instead (1.005: the median target).
// Every plan (both modes, both slot rules) goes through the tests' independent verifier
// (tests/host/plan_verifier.hpp: maps, overlaps, sizes, alignment); one it rejects misses a threshold.
// Host only (no GPU). Prints a summary table and writes JSON (default: planner_quality.json) whose cases
// hold every figure the table is computed from. Exits 1 when a quality threshold is missed (--quick: a
// small corpus, about two minutes on one core, run by ctest); --help lists the flags and exit statuses.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_support.hpp"
#include "graphpool/detail/json.hpp"
#include "graphpool/plan/planner.hpp"
#include "plan_verifier.hpp"

namespace {

using namespace graphpool::plan;

constexpr std::size_t MiB = std::size_t{1} << 20;

// Quick-corpus thresholds (offsets mode, m mod S): measured, with a little room.
constexpr double quick_offsets_p90 = 1.01;
constexpr double quick_offsets_worst = 1.23;
constexpr std::size_t quick_strictly_below_coloring = 40;
constexpr double quick_schedule_worst = 1.11;         // unions, with the sweep's replays (1.159 without them)
constexpr double quick_schedule_single_worst = 1.11;  // 1.106: vpp2 pp2 r0 M=24, proven optimal
constexpr std::size_t quick_equal_frames_off_live = 0;
constexpr std::size_t quick_off_target = 5;  // all "layers 1 heterogeneous"; slot_rule_optimum.py proves some optimal

struct corpus_case {
  std::string name;
  problem input;
};

struct result_row {
  std::string name;
  bool single = false;       // one schedule (not a union of microbatch counts)
  bool equal_frames = false;  // every frame of the same bytes
  std::size_t frames = 0;
  int slots = 0;
  std::size_t lower_bound = 0;
  std::size_t live_bound = 0;
  std::size_t naive = 0;
  std::size_t offsets = 0;
  std::size_t coloring = 0;
  std::size_t dsatur = 0;
  std::size_t coloring_arenas = 0;
  std::size_t dsatur_arenas = 0;
  bool exact = false;
  std::size_t optimum = 0;  // proven optimum (equal-size frames), 0 when unknown
  double offsets_ms = 0;
  double coloring_ms = 0;
  // The schedule slot rule (offsets mode): default budget, and no limit on copies.
  std::size_t schedule_bytes = 0;
  int schedule_copies = 0;
  double schedule_ms = 0;
  std::size_t unlimited_bytes = 0;
  std::size_t unlimited_lower_bound = 0;  // over every map: the live bound, or the least height the planner proved
  int unlimited_copies = 0;
  std::size_t mod_grad_bytes = 0;  // returned gradients: m mod S, then the schedule rule (default copies, no limit)
  std::size_t schedule_grad_bytes = 0;
  std::size_t unlimited_grad_bytes = 0;
  std::size_t grad_live_bound = 0;
  double unlimited_ms = 0;
  std::string rejected;  // the first of its four plans the independent verifier rejects, and why (empty: none)
};

// 1F1B (vpp 1) or interleaved with groups of pp, as Megatron-LM runs them.
schedule pipeline_schedule(int pp, int rank, int vpp, int microbatches) {
  return vpp == 1 ? schedule::one_f_one_b(pp, rank, microbatches) : schedule::interleaved(pp, rank, microbatches, vpp, pp);
}

// How a case's name begins: "vpp4 pp8 r3" (or "1f1b pp8 r3").
std::string pipeline_name(int pp, int rank, int vpp) {
  return (vpp == 1 ? "1f1b" : "vpp" + std::to_string(vpp)) + " pp" + std::to_string(pp) + " r" + std::to_string(rank);
}

std::vector<schedule> schedules_for(int pp, int rank, int vpp, const std::string& set) {
  std::vector<int> counts;
  if (set == "M=128") counts = {128};
  if (set == "M=24") counts = {24};
  if (set == "M=pp..64:pp" || set == "M=pp..32:pp") {
    for (int m = pp; m <= (set == "M=pp..64:pp" ? 64 : 32); m += pp) counts.push_back(m);
  }
  if (set == "M=1..128") {
    for (int m = 1; m <= 128; ++m) counts.push_back(m);
  }
  std::vector<schedule> result;
  for (int m : counts) result.push_back(pipeline_schedule(pp, rank, vpp, m));
  return result;
}

// Layer layouts: uniform 1, 3 or 8 per chunk, or heterogeneous (1..3 per chunk, the first chunk empty
// when there are several: an embedding-only stage).
std::vector<int> layers_for(const std::string& layout, int vpp) {
  if (layout == "1") return {1};
  if (layout == "3") return {3};
  if (layout == "8") return {8};
  std::vector<int> per_chunk;
  for (int c = 0; c < vpp; ++c) per_chunk.push_back(vpp > 1 && c == 0 ? 0 : 1 + (c * 2) % 3);
  return per_chunk;
}

void add_sizes(problem& p, const std::string& sizes, int vpp) {
  if (sizes == "equal") {
    p.branches = {{"cp1", 64 * MiB, 16 * MiB}};
  } else if (sizes == "4 equal") {
    p.branches = {{"cp1", 64 * MiB, 16 * MiB}, {"cp2", 64 * MiB, 16 * MiB}, {"cp4", 64 * MiB, 16 * MiB},
                  {"cp8", 64 * MiB, 16 * MiB}};
  } else if (sizes == "4 different") {
    p.branches = {{"cp1", 96 * MiB, 16 * MiB}, {"cp2", 52 * MiB, 16 * MiB}, {"cp4", 27 * MiB, 16 * MiB},
                  {"cp8", 15 * MiB, 16 * MiB}};
  } else {  // heterogeneous layers: some layers of some chunks save much more (or less) than others
    p.branches = {{"cp1", 40 * MiB, 8 * MiB}, {"cp2", 24 * MiB, 8 * MiB}};
    const int layers = std::max(1, *std::max_element(p.layers_per_chunk.begin(), p.layers_per_chunk.end()));
    for (int c = 0; c < vpp; ++c) {
      for (int l = 0; l < layers; ++l) {
        const int have = p.layers_per_chunk.size() == 1 ? p.layers_per_chunk[0] : p.layers_per_chunk[static_cast<std::size_t>(c)];
        if (l >= have) continue;
        if ((c + l) % 3 == 0) p.overrides.push_back({c, l, "cp1", static_cast<std::size_t>(40 + 37 * (c + 1)) * MiB});
        if ((c * 5 + l) % 4 == 1) p.overrides.push_back({c, l, "cp2", static_cast<std::size_t>(9 + 13 * l) * MiB});
      }
    }
  }
}

// Every rank of a pipeline of `pp` stages (quick: the first, middle and last of PP 8).
std::vector<int> corpus_ranks(int pp, bool quick) {
  if (quick && pp == 8) return {0, 4, 7};
  std::vector<int> ranks(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return ranks;
}

// `count` single schedules of random frame sizes from `seed` (--random-sizes): std::mt19937's sequence is
// the same everywhere, and each draw is taken modulo its range (no distribution, whose output varies).
std::vector<corpus_case> make_random_corpus(unsigned seed, int count) {
  std::mt19937 random(seed);
  auto draw = [&](const std::vector<int>& from) { return from[random() % from.size()]; };
  std::vector<corpus_case> corpus;
  for (int k = 0; k < count; ++k) {
    const int pp = draw({2, 4, 8});
    const int rank = static_cast<int>(random() % static_cast<unsigned>(pp));
    const int vpp = draw({1, 2, 4});
    const int microbatches = draw({24, 64, 128});
    const int layers = draw({1, 2, 3});
    corpus_case c;
    c.input.schedules = {pipeline_schedule(pp, rank, vpp, microbatches)};
    c.input.layers_per_chunk = {layers};
    c.input.branches = {{"random", 16 * MiB, 8 * MiB}};
    std::string sizes;
    for (int chunk = 0; chunk < vpp; ++chunk) {
      for (int layer = 0; layer < layers; ++layer) {
        const std::size_t mib = 16 + random() % 305;
        c.input.overrides.push_back({chunk, layer, "random", mib * MiB});
        sizes += (sizes.empty() ? "" : ",") + std::to_string(mib);
      }
    }
    c.name = pipeline_name(pp, rank, vpp) + " M=" + std::to_string(microbatches) + " layers " + std::to_string(layers) +
             " random MiB " + sizes;
    corpus.push_back(std::move(c));
  }
  return corpus;
}

std::vector<corpus_case> make_corpus(bool quick) {
  std::vector<corpus_case> corpus;
  const std::vector<std::string> sets = quick ? std::vector<std::string>{"M=24", "M=pp..32:pp"}
                                              : std::vector<std::string>{"M=128", "M=24", "M=pp..64:pp", "M=1..128"};
  const std::vector<const char*> layouts =
      quick ? std::vector<const char*>{"1", "mixed"} : std::vector<const char*>{"1", "3", "8", "mixed"};
  const std::vector<const char*> all_sizes = quick ? std::vector<const char*>{"equal", "heterogeneous"}
                                                   : std::vector<const char*>{"equal", "4 equal", "4 different", "heterogeneous"};
  for (int pp : {2, 4, 8}) {
    for (int rank : corpus_ranks(pp, quick)) {
      for (int vpp : {1, 2, 4}) {
        for (const std::string& set : sets) {
          for (const char* layout : layouts) {
            for (const char* sizes : all_sizes) {
              corpus_case c;
              c.name = pipeline_name(pp, rank, vpp) + " " + set + " layers " + layout + " " + sizes;
              c.input.schedules = schedules_for(pp, rank, vpp, set);
              c.input.layers_per_chunk = layers_for(layout, vpp);
              add_sizes(c.input, sizes, vpp);
              corpus.push_back(std::move(c));
            }
          }
        }
      }
    }
  }
  return corpus;
}

// Exact chromatic number by DSATUR branch and bound, or 0 when `node_limit` runs out.
class exact_coloring {
 public:
  exact_coloring(const conflict_graph& graph, std::size_t lower, std::size_t upper, std::size_t node_limit)
      : graph_(graph), colors_(graph.size(), none), best_(upper), lower_(lower), node_limit_(node_limit) {}

  std::size_t solve() {
    search(0, 0);
    return nodes_ > node_limit_ ? 0 : best_;
  }

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  void search(std::size_t colored, std::size_t used) {
    if (++nodes_ > node_limit_ || best_ == lower_) return;
    if (colored == graph_.size()) {
      best_ = std::min(best_, used);
      return;
    }
    std::size_t pick = none;
    std::size_t pick_saturation = 0;
    std::vector<bool> seen;
    for (std::size_t v = 0; v < graph_.size(); ++v) {
      if (colors_[v] != none) continue;
      seen.assign(used, false);
      std::size_t saturation = 0;
      graph_.for_each_neighbor(v, [&](std::size_t u) {
        if (colors_[u] != none && !seen[colors_[u]]) {
          seen[colors_[u]] = true;
          ++saturation;
        }
      });
      if (pick == none || saturation > pick_saturation) {
        pick = v;
        pick_saturation = saturation;
      }
    }
    seen.assign(used + 1, false);
    graph_.for_each_neighbor(pick, [&](std::size_t u) {
      if (colors_[u] != none) seen[colors_[u]] = true;
    });
    for (std::size_t c = 0; c <= used; ++c) {
      if (seen[c]) continue;
      const std::size_t next_used = std::max(used, c + 1);
      if (next_used >= best_) break;  // cannot beat the best coloring found
      colors_[pick] = c;
      search(colored + 1, next_used);
      colors_[pick] = none;
      if (nodes_ > node_limit_ || best_ == lower_) return;
    }
  }

  const conflict_graph& graph_;
  std::vector<std::size_t> colors_;
  std::size_t best_;
  std::size_t lower_;
  std::size_t node_limit_;
  std::size_t nodes_ = 0;
};

// The optimum of an equal-size problem: frames of equal bytes w need chi(frame graph) * w in any
// placement (offset / w is a coloring), so an exact chromatic number proves a plan optimal. 0 when
// the frames differ in size, the graph is large, or the search runs out.
std::size_t equal_size_optimum(const problem& input, const plan& result) {
  if (result.frames.empty() || result.frames.size() > 160) return 0;
  const std::size_t w = result.frames.front().bytes;
  for (const planned_frame& f : result.frames) {
    if (f.bytes != w) return 0;
  }
  const conflict_graph frames = frame_conflicts(analyze(input.schedules, input.slots), result.frames);
  const std::size_t chi =
      exact_coloring(frames, result.saved.lower_bound_bytes / w, result.saved.footprint_bytes / w, 2'000'000).solve();
  return chi * w;
}

double ratio(std::size_t a, std::size_t b) { return b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b); }

using graphpool::bench::figure;
using graphpool::bench::json_figure;

constexpr const char* help = R"(usage: graphpool_bench_planner_quality [--json PATH] [--quick | --random-sizes SEED:COUNT] [--threads N]
                                       [--misses PATH [--misses-above RATIO]] [--only TEXT]
The planner over a corpus of pipeline schedules (host only): footprint over the clique and live bounds for
both slot rules, copies, planning time; every plan checked by the tests' independent verifier.
  --json PATH            where the JSON goes (default: planner_quality.json; checked before planning)
  --quick                the small corpus ctest runs, with thresholds measured on it
  --random-sizes S:N     N single schedules whose every (chunk, layer) saves a random 16-320 MiB, from seed S
  --threads N            plan the cases on N threads (default 1; each plan is timed on its own thread)
  --misses PATH          write the cases the schedule rule (no copy limit) misses issue 8's targets on, as
                         rectangles for benchmarks/slot_rule_optimum.py
  --misses-above RATIO   with --misses: every case above RATIO x its live bound instead (RATIO >= 1)
  --only TEXT            keep the cases whose name contains TEXT (the thresholds that count plans are then
                         not checked: they are for a whole corpus)
  --help                 this text
Exit status: 0 every threshold met; 1 a threshold missed (or a plan the verifier rejects); 2 a bad flag, an
output path that cannot be written, or --only matching no case.
)";

// The q-quantile, linear between the two values around it: the median of an even count is the mean of
// its two middle values (as Python's statistics.median gives it), the worst (q = 1) the largest. NaN for
// no values (a corpus of single schedules has no unions): printed "-", written null, never a figure.
double percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(at);
  if (below + 1 >= values.size()) return values.back();
  const double fraction = at - static_cast<double>(below);
  return values[below] + fraction * (values[below + 1] - values[below]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "planner_quality.json";
  bool quick = false;
  int threads = 1;
  std::string misses_path;  // the cases that miss issue 8's targets, as rectangles for an exact solver
  double misses_above = 0;  // --misses-above: those above this x the live bound instead (0: the targets)
  std::string only;         // keep the cases whose name contains this
  unsigned random_seed = 0;  // --random-sizes: random frame sizes instead of the corpus
  int random_count = 0;
  graphpool::bench::command_line args(argc, argv, "graphpool_bench_planner_quality", help);
  const int status = args.read([&](const std::string& flag) {
    if (flag == "--json") {
      json_path = args.value();
    } else if (flag == "--quick") {
      quick = true;
    } else if (flag == "--misses") {
      misses_path = args.value();
    } else if (flag == "--misses-above") {
      misses_above = args.number(1.0);
    } else if (flag == "--random-sizes") {
      const std::string text = args.value();
      const std::size_t colon = text.find(':');
      if (colon == std::string::npos) throw graphpool::error("--random-sizes '" + text + "': give SEED:COUNT, e.g. 1:48");
      random_seed = static_cast<unsigned>(
          graphpool::plan::detail::parse_integer(text.substr(0, colon), "--random-sizes seed", 0, 4294967295LL));
      random_count = static_cast<int>(
          graphpool::plan::detail::parse_integer(text.substr(colon + 1), "--random-sizes count", 1, 100000));
    } else if (flag == "--only") {
      only = args.value();
    } else if (flag == "--threads") {
      threads = static_cast<int>(args.integer(1, 1024));
    } else {
      return false;
    }
    return true;
  });
  if (status >= 0) return status;
  if (misses_above > 0 && misses_path.empty()) {
    std::fprintf(stderr, "planner_quality: --misses-above says which cases --misses PATH writes; give --misses too\n");
    return 2;
  }
  if (quick && random_count > 0) {
    std::fprintf(stderr, "planner_quality: --quick and --random-sizes are two corpora; give one\n");
    return 2;
  }
  if (!args.writable(json_path) || (!misses_path.empty() && !args.writable(misses_path))) return 2;
  std::vector<corpus_case> corpus = random_count > 0 ? make_random_corpus(random_seed, random_count) : make_corpus(quick);
  corpus.erase(std::remove_if(corpus.begin(), corpus.end(),
                              [&](const corpus_case& c) { return c.name.find(only) == std::string::npos; }),
               corpus.end());
  if (corpus.empty()) {
    std::fprintf(stderr, "planner_quality: no corpus case's name contains '%s'\n", only.c_str());
    return 2;
  }
  auto measure = [](const corpus_case& c) {
    result_row row;
    row.name = c.name;
    const auto t0 = std::chrono::steady_clock::now();
    const plan offsets = make_plan(c.input, assignment::offsets);
    const auto t1 = std::chrono::steady_clock::now();
    const plan colored = make_plan(c.input, assignment::coloring);
    const auto t2 = std::chrono::steady_clock::now();
    row.frames = offsets.frames.size();
    row.slots = offsets.slots;
    row.lower_bound = offsets.saved.lower_bound_bytes;
    row.live_bound = offsets.saved.live_bound_bytes;
    row.exact = offsets.saved.lower_bound_exact;
    row.naive = offsets.saved.naive_bytes;
    row.offsets = offsets.saved.footprint_bytes;
    row.coloring = colored.saved.footprint_bytes;
    row.dsatur = colored.saved.coloring_bytes;
    row.coloring_arenas = colored.saved.arenas;
    row.dsatur_arenas = colored.saved.coloring_arenas;
    if (row.offsets > row.lower_bound) row.optimum = equal_size_optimum(c.input, offsets);
    if (row.offsets == row.lower_bound) row.optimum = row.lower_bound;
    row.offsets_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    row.coloring_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    row.single = c.input.schedules.size() == 1;
    row.equal_frames = std::all_of(offsets.frames.begin(), offsets.frames.end(),
                                   [&](const planned_frame& f) { return f.bytes == offsets.frames.front().bytes; });
    problem by_schedule = c.input;
    by_schedule.rule = slot_rule::schedule;
    problem no_copy_limit = by_schedule;
    no_copy_limit.max_copies = 0;
    const auto t3 = std::chrono::steady_clock::now();
    const plan budgeted = make_plan(by_schedule, assignment::offsets);
    const auto t4 = std::chrono::steady_clock::now();
    const plan unlimited = make_plan(no_copy_limit, assignment::offsets);
    const auto t5 = std::chrono::steady_clock::now();
    row.schedule_bytes = budgeted.saved.footprint_bytes;
    row.schedule_copies = budgeted.slots;
    row.mod_grad_bytes = offsets.grad.footprint_bytes;
    row.schedule_grad_bytes = budgeted.grad.footprint_bytes;
    row.unlimited_grad_bytes = unlimited.grad.footprint_bytes;
    row.grad_live_bound = offsets.grad.live_bound_bytes;
    row.schedule_ms = std::chrono::duration<double, std::milli>(t4 - t3).count();
    row.unlimited_bytes = unlimited.saved.footprint_bytes;
    row.unlimited_lower_bound = unlimited.saved.lower_bound_bytes;
    row.unlimited_copies = unlimited.slots;
    row.unlimited_ms = std::chrono::duration<double, std::milli>(t5 - t4).count();
    // Each plan with the problem it was planned from.
    const std::tuple<const char*, const problem*, const plan*> plans[] = {
        {"m mod S, offsets", &c.input, &offsets},
        {"m mod S, coloring", &c.input, &colored},
        {"schedule rule, default copies", &by_schedule, &budgeted},
        {"schedule rule, no copy limit", &no_copy_limit, &unlimited}};
    for (const auto& [what, from, planned] : plans) {
      const graphpool::testing::verification v = graphpool::testing::verify_plan(*from, *planned);
      if (!v.ok && row.rejected.empty()) row.rejected = std::string(what) + ": " + v.problem;
    }
    return row;
  };
  // Cases run on `threads` threads (each plan is timed on its own thread); progress goes to stderr.
  std::vector<result_row> rows(corpus.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  auto work = [&] {
    for (std::size_t i = next++; i < corpus.size(); i = next++) {
      rows[i] = measure(corpus[i]);
      const std::size_t finished = ++done;
      if (finished % 50 == 0 || finished == corpus.size()) std::fprintf(stderr, "%zu / %zu plans\n", finished, corpus.size());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  std::vector<double> offsets_ratio;
  std::vector<double> coloring_ratio;
  std::vector<double> naive_ratio;
  std::vector<double> times;
  std::size_t above_coloring = 0;
  std::size_t above_target = 0;
  std::size_t above_target_proven_optimal = 0;
  double worst_over_optimum = std::nan("");  // NaN until a plan's optimum is known
  std::size_t more_arenas = 0;
  const result_row* worst = &rows.front();
  for (const result_row& r : rows) {
    offsets_ratio.push_back(ratio(r.offsets, r.lower_bound));
    coloring_ratio.push_back(ratio(r.coloring, r.lower_bound));
    naive_ratio.push_back(ratio(r.naive, r.lower_bound));
    times.push_back(r.offsets_ms);
    above_coloring += r.offsets > r.dsatur ? 1 : 0;
    more_arenas += r.coloring_arenas > r.dsatur_arenas ? 1 : 0;
    if (ratio(r.offsets, r.lower_bound) > ratio(worst->offsets, worst->lower_bound)) worst = &r;
    if (ratio(r.offsets, r.lower_bound) > 1.10) {
      ++above_target;
      above_target_proven_optimal += r.optimum == r.offsets ? 1 : 0;
    }
    if (r.optimum > 0) worst_over_optimum = std::fmax(worst_over_optimum, ratio(r.offsets, r.optimum));  // fmax skips NaN
  }
  std::printf("planner quality over %zu plans (footprint / clique lower bound)\n\n", rows.size());
  std::printf("%-30s %8s %8s %8s\n", "", "median", "p90", "worst");
  std::printf("%-30s %8.3f %8.3f %8.3f\n", "offsets / lower bound", percentile(offsets_ratio, 0.5),
              percentile(offsets_ratio, 0.9), percentile(offsets_ratio, 1.0));
  std::printf("%-30s %8.3f %8.3f %8.3f\n", "coloring / lower bound", percentile(coloring_ratio, 0.5),
              percentile(coloring_ratio, 0.9), percentile(coloring_ratio, 1.0));
  std::printf("%-30s %8.3f %8.3f %8.3f\n", "naive / lower bound", percentile(naive_ratio, 0.5),
              percentile(naive_ratio, 0.9), percentile(naive_ratio, 1.0));
  std::printf("%-30s %8.2f %8.2f %8.2f\n", "offsets planning ms", percentile(times, 0.5), percentile(times, 0.9),
              percentile(times, 1.0));
  std::printf("\nworst offsets case: %s (%.3f)\n", worst->name.c_str(), ratio(worst->offsets, worst->lower_bound));
  std::printf("offsets above the DSATUR coloring: %zu plans; coloring with more arenas than DSATUR: %zu plans\n",
              above_coloring, more_arenas);
  std::printf("offsets above 1.10 x lower bound: %zu plans, %zu of them proven optimal (equal-size frames: the optimum\n"
              "is chi(frame graph) x frame bytes, and an exact coloring found chi above the clique)\n",
              above_target, above_target_proven_optimal);
  std::printf("worst offsets / proven optimum, over plans whose optimum is known: %s\n", figure(worst_over_optimum, 3).c_str());

  // The slot rules side by side, offsets mode: footprint / live bound (no slot map can beat the live
  // bound), copies per chunk against m mod S's, planning time.
  struct rule_figures {
    const char* name;
    std::vector<double> single;
    std::vector<double> unions;
    std::vector<double> copies;
    std::vector<double> ms;
  };
  rule_figures rules[3] = {{"m mod S", {}, {}, {}, {}}, {"schedule, default copies", {}, {}, {}, {}},
                           {"schedule, no copy limit", {}, {}, {}, {}}};
  std::size_t schedule_above_mod = 0;
  std::size_t schedule_over_budget = 0;
  std::size_t equal_frames_off_live = 0;
  std::size_t grads_above_live[3] = {0, 0, 0};  // plans whose returned gradients need more than their live bound
  std::size_t grads_above_mod = 0;               // schedule rule (default copies): gradients above m mod S's
  std::size_t off_target = 0;  // schedule rule, no copy limit: above 1.05 (single) or 1.10 (unions) of the live bound
  std::size_t off_target_proven = 0;  // of them, the planner proved no layout lower (its bound is its footprint)
  std::size_t strictly_below_coloring = 0;
  std::size_t rejected = 0;  // cases with a plan the independent verifier rejects
  const result_row* first_rejected = nullptr;
  const result_row* worst_unlimited = &rows.front();
  for (const result_row& r : rows) {
    if (!r.rejected.empty()) {
      ++rejected;
      if (first_rejected == nullptr) first_rejected = &r;
    }
    const std::size_t bytes[3] = {r.offsets, r.schedule_bytes, r.unlimited_bytes};
    const int copies[3] = {r.slots, r.schedule_copies, r.unlimited_copies};
    const double ms[3] = {r.offsets_ms, r.schedule_ms, r.unlimited_ms};
    for (int k = 0; k < 3; ++k) {
      (r.single ? rules[k].single : rules[k].unions).push_back(ratio(bytes[k], r.live_bound));
      rules[k].copies.push_back(static_cast<double>(copies[k]) / static_cast<double>(r.slots));
      rules[k].ms.push_back(ms[k]);
    }
    schedule_above_mod += r.schedule_bytes > r.offsets ? 1 : 0;
    schedule_over_budget += r.schedule_copies > 2 * r.slots ? 1 : 0;
    equal_frames_off_live += r.equal_frames && r.unlimited_bytes != r.live_bound ? 1 : 0;
    const std::size_t grads[3] = {r.mod_grad_bytes, r.schedule_grad_bytes, r.unlimited_grad_bytes};
    for (int k = 0; k < 3; ++k) grads_above_live[k] += grads[k] > r.grad_live_bound ? 1 : 0;
    grads_above_mod += r.schedule_grad_bytes > r.mod_grad_bytes ? 1 : 0;
    const bool missed_target = ratio(r.unlimited_bytes, r.live_bound) > (r.single ? 1.05 : 1.10);
    off_target += missed_target ? 1 : 0;
    off_target_proven += missed_target && r.unlimited_bytes == r.unlimited_lower_bound ? 1 : 0;
    strictly_below_coloring += r.offsets < r.coloring ? 1 : 0;
    if (ratio(r.unlimited_bytes, r.live_bound) > ratio(worst_unlimited->unlimited_bytes, worst_unlimited->live_bound)) {
      worst_unlimited = &r;
    }
  }
  auto median_worst = [](const std::vector<double>& values) {
    return figure(percentile(values, 0.5), 3) + " / " + figure(percentile(values, 1.0), 3);
  };
  std::printf("\nslot rules (offsets mode), footprint / live bound over %zu single schedules and %zu unions\n\n",
              rules[0].single.size(), rules[0].unions.size());
  std::printf("%-26s %16s %16s %20s %18s\n", "median / worst", "single", "unions", "copies / m mod S's", "planning ms");
  for (const rule_figures& f : rules) {
    std::printf("%-26s %16s %16s %20s %18s\n", f.name, median_worst(f.single).c_str(), median_worst(f.unions).c_str(),
                median_worst(f.copies).c_str(), median_worst(f.ms).c_str());
  }
  std::printf("\nworst schedule rule without a copy limit: %s (%.3f of the live bound)\n", worst_unlimited->name.c_str(),
              ratio(worst_unlimited->unlimited_bytes, worst_unlimited->live_bound));
  std::printf("offsets (m mod S) strictly below the coloring: %zu plans\n", strictly_below_coloring);
  std::printf("schedule rule above m mod S: %zu plans; above twice m mod S's copies: %zu plans; equal frames off the "
              "live bound (no copy limit): %zu plans\n",
              schedule_above_mod, schedule_over_budget, equal_frames_off_live);
  std::printf("schedule rule (no copy limit) above issue 8's targets (1.05 single, 1.10 unions): %zu plans, %zu of them "
              "proven optimal by the planner\n",
              off_target, off_target_proven);
  std::printf("cases with a plan the independent verifier rejects (4 plans each: maps, overlaps, sizes, alignment): "
              "%zu of %zu%s%s\n",
              rejected, rows.size(), first_rejected == nullptr ? "" : "; first: ",
              first_rejected == nullptr ? "" : (first_rejected->name + ", " + first_rejected->rejected).c_str());
  std::printf("returned gradients above their live bound: m mod S %zu plans, schedule rule %zu (default copies), %zu (no copy "
              "limit); schedule rule (default copies) above m mod S's gradients: %zu plans\n",
              grads_above_live[0], grads_above_live[1], grads_above_live[2], grads_above_mod);

  // The planning-time target: PP8 VPP4, every M = 1..128, 8 layers per chunk, 4 branches (median of 5), on
  // every rank of the pipeline (the ranks' warm-ups differ, and with them the copies and the searches).
  auto target_on = [&](int rank) {
    problem target;
    for (int m = 1; m <= 128; ++m) target.schedules.push_back(schedule::interleaved(8, rank, m, 4, 8));
    target.layers_per_chunk = {8};
    target.branches = {{"cp1", 96 * MiB, 16 * MiB}, {"cp2", 52 * MiB, 16 * MiB}, {"cp4", 27 * MiB, 16 * MiB},
                       {"cp8", 15 * MiB, 16 * MiB}};
    return target;
  };
  struct target_time {
    double rank0 = 0;   // median on rank 0
    double slowest = 0;  // median on the slowest rank
    int slowest_rank = 0;
  };
  auto time_target = [&](const char* what, slot_rule rule, int max_copies, bool unequal_layers,
                         const std::vector<int>& ranks) {
    target_time result;
    std::size_t rank0_frames = 0;
    for (int rank : ranks) {
      problem target = target_on(rank);
      target.rule = rule;
      target.max_copies = max_copies;
      if (unequal_layers) {  // as the corpus's heterogeneous sizes: the searches' effort bounds the time
        for (int c = 0; c < 4; ++c) {
          for (int l = 0; l < 8; ++l) {
            if ((c + l) % 3 == 0) target.overrides.push_back({c, l, "cp1", static_cast<std::size_t>(40 + 37 * (c + 1)) * MiB});
          }
        }
      }
      std::vector<double> target_ms;
      for (int run = 0; run < (quick ? 1 : 5); ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::size_t frames = make_plan(target, assignment::offsets).frames.size();
        target_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (rank == 0) rank0_frames = frames;
      }
      const double median = percentile(target_ms, 0.5);
      if (rank == 0) result.rank0 = median;
      if (median > result.slowest) {
        result.slowest = median;
        result.slowest_rank = rank;
      }
    }
    std::printf("planning PP8 VPP4 M=1..128, 8 layers per chunk, 4 branches, %s: rank 0 (%zu frames) %.1f ms", what,
                rank0_frames, result.rank0);
    if (ranks.size() > 1) std::printf(", slowest of ranks 0..%d: rank %d %.1f ms", ranks.back(), result.slowest_rank, result.slowest);
    std::printf(", medians of %d (%s)\n", quick ? 1 : 5,
                unequal_layers ? "no target: issue 8's is for equal layers" : "target: under 100 ms");
    return result;
  };
  const std::vector<int> every_rank = {0, 1, 2, 3, 4, 5, 6, 7};
  const target_time target_mod = time_target("m mod S", slot_rule::mod, twice_modulo_copies, false, every_rank);
  const target_time target_schedule =
      time_target("schedule rule, default copies", slot_rule::schedule, twice_modulo_copies, false, every_rank);
  const target_time target_unlimited = time_target("schedule rule, no copy limit", slot_rule::schedule, 0, false, every_rank);
  const double target_median = target_mod.rank0;
  const double target_schedule_median = target_schedule.rank0;
  const double target_unlimited_median = target_unlimited.rank0;
  // The same plan with unequal layers, rank 0 only (seconds each).
  const double unequal_median = time_target("unequal layers, m mod S", slot_rule::mod, twice_modulo_copies, true, {0}).rank0;
  const double unequal_schedule_median =
      time_target("unequal layers, schedule rule, default copies", slot_rule::schedule, twice_modulo_copies, true, {0}).rank0;
  const double unequal_unlimited_median =
      time_target("unequal layers, schedule rule, no copy limit", slot_rule::schedule, 0, true, {0}).rank0;

  // Megatron-LM's reference: PP4 VPP4 G4, 3 layers per chunk, 8 slots, M = 4..64:4.
  std::vector<std::size_t> reference_arenas;
  for (int rank = 0; rank < 4; ++rank) {
    problem ref;
    for (int m = 4; m <= 64; m += 4) ref.schedules.push_back(schedule::interleaved(4, rank, m, 4, 4));
    ref.layers_per_chunk = {3};
    ref.slots = 8;
    ref.branches = {{"cp1", 64 * MiB, 16 * MiB}};
    reference_arenas.push_back(make_plan(ref, assignment::coloring).saved.arenas);
  }
  std::printf("PP4 VPP4 reference, saved arenas on ranks 0..3: %zu %zu %zu %zu (Megatron-LM's DSATUR: 60 60 48 48)\n",
              reference_arenas[0], reference_arenas[1], reference_arenas[2], reference_arenas[3]);

  // Thresholds: what the planner promises on every corpus, and (quick corpus) figures measured on it
  // with a little room, which a broken placement search or offsets mode would miss. A figure over no
  // plans (NaN: no unions in a corpus of single schedules) misses nothing.
  std::vector<std::string> missed;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) missed.push_back(what);
  };
  auto at_most = [](double value, double limit) { return std::isnan(value) || value <= limit; };
  expect(rejected == 0, "a plan the independent verifier rejects");
  expect(above_coloring == 0, "offsets above the DSATUR coloring");
  expect(more_arenas == 0, "coloring with more arenas than DSATUR");
  expect(schedule_above_mod == 0, "schedule rule (default copies) above m mod S");
  expect(schedule_over_budget == 0, "schedule rule (default copies) above twice m mod S's copies");
  if (only.empty()) {  // a median is over a whole corpus: a part of it (--only) need not meet it
    expect(at_most(percentile(rules[2].single, 0.5), 1.005), "schedule rule single schedules: median above 1.005");
  }
  if (!quick) {  // issue 8's targets; heterogeneous layers miss them, some provably (slot_rule_optimum.py)
    expect(equal_frames_off_live == 0, "equal frames off the live bound (schedule rule, no copy limit)");
    expect(at_most(percentile(rules[2].single, 1.0), 1.05), "schedule rule single schedules: worst above 1.05");
    expect(at_most(percentile(rules[2].unions, 1.0), 1.10), "schedule rule unions: worst above 1.10");
    for (const target_time* t : {&target_mod, &target_schedule, &target_unlimited}) {
      expect(t->slowest <= 100.0, "planning PP8 VPP4 M=1..128 (equal layers): rank " + std::to_string(t->slowest_rank) +
                                      " above 100 ms");
    }
  } else {
    expect(equal_frames_off_live <= quick_equal_frames_off_live, "more equal-frame plans off the live bound than measured");
    expect(at_most(percentile(rules[2].single, 1.0), quick_schedule_single_worst),
           "schedule rule single schedules: worst above measured");
    expect(at_most(percentile(rules[2].unions, 1.0), quick_schedule_worst), "schedule rule unions: worst above measured");
    expect(percentile(offsets_ratio, 1.0) <= quick_offsets_worst, "offsets / lower bound worst above the quick threshold");
    expect(off_target <= quick_off_target, "more plans off issue 8's targets (schedule rule, no copy limit) than measured");
    if (only.empty()) {  // a p90 and a least count measured on the whole quick corpus: a part of it need not meet them
      expect(percentile(offsets_ratio, 0.9) <= quick_offsets_p90, "offsets / lower bound p90 above the quick threshold");
      expect(strictly_below_coloring >= quick_strictly_below_coloring,
             "fewer plans with offsets strictly below the coloring than the quick threshold");
    }
  }

  std::FILE* out = std::fopen(json_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "planner_quality: cannot write %s\n", json_path.c_str());
    return 1;
  }
  const std::string corpus_name = (random_count > 0 ? "random sizes, seed " + std::to_string(random_seed) + ", " +
                                                         std::to_string(random_count) + " single schedules"
                                 : quick ? "quick" : "full") +
                                (only.empty() ? "" : ", only the cases whose name contains '" + only + "'");
  std::fprintf(out, "{\n  \"benchmark\": \"planner_quality\",\n%s  \"corpus\": %s,\n  \"only\": %s,\n  \"plans\": %zu,\n",
               graphpool::bench::commit_json().c_str(), graphpool::detail::json_quote(corpus_name).c_str(),
               graphpool::detail::json_quote(only).c_str(), rows.size());
  std::fprintf(out, "  \"worst_offsets_case\": %s,\n  \"worst_no_copy_limit_case\": %s,\n",
               graphpool::detail::json_quote(worst->name).c_str(), graphpool::detail::json_quote(worst_unlimited->name).c_str());
  std::fprintf(out, "  \"thresholds_missed\": [");
  for (std::size_t i = 0; i < missed.size(); ++i) {
    std::fprintf(out, "%s%s", i ? ", " : "", graphpool::detail::json_quote(missed[i]).c_str());
  }
  std::fprintf(out, "],\n");
  std::fprintf(out, "  \"offsets_ratio\": {\"median\": %.4f, \"p90\": %.4f, \"worst\": %.4f},\n",
               percentile(offsets_ratio, 0.5), percentile(offsets_ratio, 0.9), percentile(offsets_ratio, 1.0));
  std::fprintf(out, "  \"coloring_ratio\": {\"median\": %.4f, \"p90\": %.4f, \"worst\": %.4f},\n",
               percentile(coloring_ratio, 0.5), percentile(coloring_ratio, 0.9), percentile(coloring_ratio, 1.0));
  std::fprintf(out, "  \"naive_ratio\": {\"median\": %.4f, \"p90\": %.4f, \"worst\": %.4f},\n",
               percentile(naive_ratio, 0.5), percentile(naive_ratio, 0.9), percentile(naive_ratio, 1.0));
  std::fprintf(out, "  \"offsets_planning_ms\": {\"median\": %.3f, \"p90\": %.3f, \"worst\": %.3f},\n",
               percentile(times, 0.5), percentile(times, 0.9), percentile(times, 1.0));
  std::fprintf(out, "  \"offsets_above_coloring\": %zu,\n  \"coloring_more_arenas_than_dsatur\": %zu,\n", above_coloring,
               more_arenas);
  std::fprintf(out, "  \"offsets_above_1_10\": %zu,\n  \"offsets_above_1_10_proven_optimal\": %zu,\n", above_target,
               above_target_proven_optimal);
  std::fprintf(out, "  \"worst_offsets_over_proven_optimum\": %s,\n", json_figure(worst_over_optimum, 4).c_str());
  std::fprintf(out, "  \"target_case_planning_ms\": %.3f,\n", target_median);
  std::fprintf(out, "  \"target_case_planning_ms_schedule_rule\": {\"default_copies\": %.3f, \"no_copy_limit\": %.3f},\n",
               target_schedule_median, target_unlimited_median);
  std::fprintf(out,
               "  \"target_case_planning_ms_slowest_rank\": {\"m_mod_s\": [%d, %.3f], \"default_copies\": [%d, %.3f], "
               "\"no_copy_limit\": [%d, %.3f]},\n",
               target_mod.slowest_rank, target_mod.slowest, target_schedule.slowest_rank, target_schedule.slowest,
               target_unlimited.slowest_rank, target_unlimited.slowest);
  std::fprintf(out,
               "  \"target_case_planning_ms_unequal_layers\": {\"m_mod_s\": %.3f, \"default_copies\": %.3f, "
               "\"no_copy_limit\": %.3f},\n",
               unequal_median, unequal_schedule_median, unequal_unlimited_median);
  std::fprintf(out, "  \"slot_rules_footprint_over_live_bound\": {\n");
  for (int k = 0; k < 3; ++k) {
    const rule_figures& f = rules[k];
    std::fprintf(out,
                 "    \"%s\": {\"single_median\": %s, \"single_worst\": %s, \"unions_median\": %s, "
                 "\"unions_worst\": %s, \"copies_over_mod_median\": %.4f, \"copies_over_mod_worst\": %.4f, "
                 "\"planning_ms_median\": %.3f, \"planning_ms_worst\": %.3f}%s\n",
                 f.name, json_figure(percentile(f.single, 0.5), 4).c_str(), json_figure(percentile(f.single, 1.0), 4).c_str(),
                 json_figure(percentile(f.unions, 0.5), 4).c_str(), json_figure(percentile(f.unions, 1.0), 4).c_str(),
                 percentile(f.copies, 0.5), percentile(f.copies, 1.0), percentile(f.ms, 0.5), percentile(f.ms, 1.0),
                 k < 2 ? "," : "");
  }
  std::fprintf(out, "  },\n  \"schedule_rule_above_mod\": %zu,\n  \"schedule_rule_over_copies_budget\": %zu,\n",
               schedule_above_mod, schedule_over_budget);
  std::fprintf(out, "  \"equal_frames_off_live_bound\": %zu,\n  \"offsets_strictly_below_coloring\": %zu,\n",
               equal_frames_off_live, strictly_below_coloring);
  std::fprintf(out, "  \"schedule_rule_off_target\": %zu,\n", off_target);
  std::fprintf(out, "  \"schedule_rule_off_target_proven_optimal\": %zu,\n", off_target_proven);
  std::fprintf(out, "  \"cases_rejected_by_verifier\": %zu,\n", rejected);
  std::fprintf(out,
               "  \"grads_above_live_bound\": {\"m_mod_s\": %zu, \"default_copies\": %zu, \"no_copy_limit\": %zu},\n"
               "  \"schedule_rule_grads_above_mod\": %zu,\n",
               grads_above_live[0], grads_above_live[1], grads_above_live[2], grads_above_mod);
  std::fprintf(out, "  \"reference_pp4_vpp4_arenas\": [%zu, %zu, %zu, %zu],\n", reference_arenas[0], reference_arenas[1],
               reference_arenas[2], reference_arenas[3]);
  std::fprintf(out, "  \"cases\": [\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const result_row& r = rows[i];
    std::fprintf(out,
                 "    {\"name\": \"%s\", \"frames\": %zu, \"slots\": %d, \"lower_bound_bytes\": %zu, "
                 "\"lower_bound_exact\": %s, \"optimum_bytes\": %zu, \"live_bound_bytes\": %zu, \"naive_bytes\": %zu, \"offsets_bytes\": %zu, "
                 "\"coloring_bytes\": %zu, \"dsatur_bytes\": %zu, \"coloring_arenas\": %zu, \"dsatur_arenas\": %zu, "
                 "\"offsets_ms\": %.3f, \"coloring_ms\": %.3f, \"schedule_rule_bytes\": %zu, \"schedule_rule_copies\": %d, "
                 "\"schedule_rule_ms\": %.3f, \"no_copy_limit_bytes\": %zu, \"no_copy_limit_lower_bound_bytes\": %zu, "
                 "\"no_copy_limit_copies\": %d, "
                 "\"no_copy_limit_ms\": %.3f, \"single\": %s, \"equal_frames\": %s, \"grad_live_bound_bytes\": %zu, "
                 "\"mod_grad_bytes\": %zu, \"schedule_rule_grad_bytes\": %zu, \"no_copy_limit_grad_bytes\": %zu, "
                 "\"rejected\": %s}%s\n",
                 r.name.c_str(), r.frames, r.slots, r.lower_bound, r.exact ? "true" : "false", r.optimum, r.live_bound, r.naive,
                 r.offsets, r.coloring, r.dsatur, r.coloring_arenas, r.dsatur_arenas, r.offsets_ms, r.coloring_ms,
                 r.schedule_bytes, r.schedule_copies, r.schedule_ms, r.unlimited_bytes, r.unlimited_lower_bound,
                 r.unlimited_copies, r.unlimited_ms, r.single ? "true" : "false", r.equal_frames ? "true" : "false",
                 r.grad_live_bound, r.mod_grad_bytes, r.schedule_grad_bytes, r.unlimited_grad_bytes,
                 graphpool::detail::json_quote(r.rejected).c_str(), i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(out, "  ]\n}\n");
  std::fclose(out);
  std::printf("wrote %s\n", json_path.c_str());

  if (!misses_path.empty()) {
    std::FILE* misses = std::fopen(misses_path.c_str(), "w");
    if (misses == nullptr) {
      std::fprintf(stderr, "planner_quality: cannot write %s\n", misses_path.c_str());
      return 1;
    }
    std::fprintf(misses, "[\n");
    bool first = true;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const result_row& r = rows[i];
      const double above = misses_above > 0 ? misses_above : r.single ? 1.05 : 1.10;
      if (ratio(r.unlimited_bytes, r.live_bound) <= above) continue;
      const problem& input = corpus[i].input;
      const auto sizes = graphpool::plan::detail::size_frames(input, common_chunks(input.schedules));
      std::fprintf(misses, "%s  {\"name\": \"%s\", \"live_bound_bytes\": %zu, \"schedule_rule_bytes\": %zu, \"schedules\": [",
                   first ? "" : ",\n", r.name.c_str(), r.live_bound, r.unlimited_bytes);
      first = false;
      for (std::size_t k = 0; k < input.schedules.size(); ++k) {
        std::fprintf(misses, "%s\n    {\"microbatches\": %d, \"rectangles\": [", k == 0 ? "" : ",", input.schedules[k].microbatches());
        bool first_rectangle = true;
        for (const auto& item : graphpool::plan::detail::lifetimes_of(input.schedules[k])) {
          for (std::size_t bytes : sizes.bytes[static_cast<std::size_t>(item.chunk)]) {
            if (bytes == 0) continue;
            std::fprintf(misses, "%s[%zu, %zu, %zu]", first_rectangle ? "" : ", ", item.start, item.end, bytes);
            first_rectangle = false;
          }
        }
        std::fprintf(misses, "]}");
      }
      std::fprintf(misses, "]}");
    }
    std::fprintf(misses, "\n]\n");
    std::fclose(misses);
  }

  for (const std::string& what : missed) std::printf("THRESHOLD MISSED: %s\n", what.c_str());
  return missed.empty() ? 0 : 1;
}
