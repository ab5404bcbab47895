// Runs n tasks on at most `workers` threads; the first failure stops the rest from starting.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/result.h"

namespace endure::s3 {

// task(i) for i in [0, n); returns the first failure (by time), or Ok. Tasks already
// running when one fails finish; no new one starts.
inline Status parallel_for(size_t n, int workers, const std::function<Status(size_t)>& task) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::optional<Error> first;
  auto work = [&] {
    for (;;) {
      if (failed.load()) return;
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      Status st = task(i);
      if (!st) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = st.error();
        failed = true;
      }
    }
  };
  size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(1, workers)));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < count; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (first) return *first;
  return Status::Ok();
}

}  // namespace endure::s3
