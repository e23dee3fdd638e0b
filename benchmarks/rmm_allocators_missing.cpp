// rmm_allocators.hpp when the benchmark was built without RMM: the rows are skipped.

#include "rmm_allocators.hpp"

#include <stdexcept>

namespace graphpool::bench {

struct rmm_allocators::impl {};

rmm_allocators::rmm_allocators(cudaStream_t, std::size_t) {}
rmm_allocators::~rmm_allocators() = default;

bool rmm_allocators::available() const noexcept { return false; }

std::string rmm_allocators::describe() const {
  return "RMM not built in (run scripts/fetch_rmm.sh, or install the librmm-cu13 wheel, and configure again)";
}

void rmm_allocators::pool_pairs(int, std::size_t) { throw std::logic_error("rmm_allocators: built without RMM"); }
void rmm_allocators::arena_pairs(int, std::size_t) { throw std::logic_error("rmm_allocators: built without RMM"); }

}  // namespace graphpool::bench
