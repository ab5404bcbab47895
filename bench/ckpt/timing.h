// What bench/ckpt's programs time with: a monotonic clock, medians, and a dropped page
// cache, so that reads come from the disk.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <vector>

namespace endure::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void drop_caches() {
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace endure::bench
