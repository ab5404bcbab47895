// A thread that runs a rank's collectives one after another, in the order they were pushed,
// while the model computes: the same order on every rank, so the ranks' collectives match.
// The gradient reducer's buckets and the ZeRO engine's units both go through one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/result.h"

namespace endure::dp {

class CommQueue {
 public:
  CommQueue();
  ~CommQueue();  // runs what is queued, then stops
  CommQueue(const CommQueue&) = delete;
  CommQueue& operator=(const CommQueue&) = delete;

  // Queues task; returns its ticket. After a task fails, the rest are skipped (the step is
  // lost anyway) but still complete, so that waits return.
  uint64_t push(std::function<Status()> task);
  // Waits until the task of `ticket` and every one before it have run; the first error
  // so far, if any. Time spent here is communication the caller was not hidden from.
  Status wait(uint64_t ticket);
  Status drain() { return wait(pushed_); }

  // A new step, nothing queued: forgets the last step's error and figures.
  void begin_step();
  // Since begin_step(): seconds in tasks, and seconds callers waited in wait().
  double busy_seconds() const;
  double waited_seconds() const;

 private:
  void loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<Status()>> tasks_;
  uint64_t pushed_ = 0, done_ = 0;
  Status error_;
  bool stop_ = false;
  double busy_ = 0, waited_ = 0;
  std::thread thread_;
};

}  // namespace endure::dp
