// The swarm's two clocks: steady nanoseconds for schedules and latencies, and the wall clock
// (seconds since the epoch) for what the results are compared with endured's own records.
#pragma once

#include <time.h>

#include <cstdint>

namespace endure::swarm {

inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSecond = 1'000'000'000;

inline int64_t steady_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * kNsPerSecond + ts.tv_nsec;
}

inline double wall_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

inline int64_t seconds_to_ns(double seconds) {
  return static_cast<int64_t>(seconds * static_cast<double>(kNsPerSecond));
}

}  // namespace endure::swarm
