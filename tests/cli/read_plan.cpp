// Reads a plan written by `graphpool-plan --json` back with plan::from_json and prints its branch names,
// one a line, and its frame count: the command-line test compares them with what it asked for.

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "graphpool/plan/load.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: graphpool_read_plan PLAN.json\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  try {
    const graphpool::plan::plan p = graphpool::plan::from_json(text.str());
    for (const std::string& name : p.branches) std::printf("branch %s\n", name.c_str());
    std::printf("frames %zu\n", p.frames.size());
  } catch (const graphpool::error& e) {
    std::fprintf(stderr, "graphpool_read_plan: %s\n", e.what());
    return 1;
  }
  return 0;
}
