#pragma once
// Helpers shared by the benchmarks.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace graphpool::bench {

/// The median of `values` (the mean of the two middle ones for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace graphpool::bench
