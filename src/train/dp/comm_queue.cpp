#include "train/dp/comm_queue.h"

#include <chrono>

namespace endure::dp {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

CommQueue::CommQueue() : thread_([this] { loop(); }) {}

CommQueue::~CommQueue() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ == pushed_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t CommQueue::push(std::function<Status()> task) {
  std::lock_guard lock(mu_);
  tasks_.push_back(std::move(task));
  cv_.notify_all();
  return ++pushed_;
}

Status CommQueue::wait(uint64_t ticket) {
  auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return done_ >= ticket; });
  waited_ += seconds_since(start);
  return error_;
}

void CommQueue::begin_step() {
  std::lock_guard lock(mu_);
  error_ = {};
  busy_ = waited_ = 0;
}

double CommQueue::busy_seconds() const {
  std::lock_guard lock(mu_);
  return busy_;
}

double CommQueue::waited_seconds() const {
  std::lock_guard lock(mu_);
  return waited_;
}

void CommQueue::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    const bool failed = !error_.ok();
    lock.unlock();
    auto start = std::chrono::steady_clock::now();
    Status s = failed ? Status{} : task();
    const double took = seconds_since(start);
    lock.lock();
    if (!s && error_.ok()) error_ = s;
    busy_ += took;
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace endure::dp
