// Plans with the installed headers and no CUDA toolkit: the plan layer includes no CUDA header.
#include <graphpool/plan.hpp>

#include <cstdio>

int main() {
  using namespace graphpool::plan;
  problem input;
  input.schedules = parse_schedule_spec("pp=2,rank=0,microbatches=4");
  input.layers_per_chunk = {1};
  input.branches = {parse_branch_spec("cp1:64MiB"), parse_branch_spec("cp2:32MiB")};
  const plan result = make_plan(input, assignment::offsets);
  std::fputs(summary_table(result).c_str(), stdout);
  return result.saved.footprint_bytes == 2 * (64u << 20) ? 0 : 1;
}
