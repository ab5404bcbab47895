#include <algorithm>
#include <chrono>

#include "endure/dp.h"

namespace endure::dp {

GradientReducer::GradientReducer(comm::Communicator& comm, float* grads, std::size_t n,
                                 std::size_t bucket_floats)
    : comm_(comm), grads_(grads), n_(n), final_from_(n) {
  bucket_floats = std::max<std::size_t>(1, bucket_floats);
  for (std::size_t end = n; end > 0;) {
    std::size_t begin = end > bucket_floats ? end - bucket_floats : 0;
    bounds_.push_back({begin, end});
    end = begin;
  }
  thread_ = std::thread([this] { loop(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradientReducer::begin() {
  std::lock_guard lock(mu_);
  next_bucket_ = 0;
  final_from_ = n_;
  queue_.clear();
  done_ = 0;
  finishing_ = false;
  error_ = {};
  comm_seconds_ = 0;
  exposed_seconds_ = 0;
}

void GradientReducer::ready(std::size_t begin, std::size_t end) {
  (void)end;  // ranges come in order: only how far down the final part reaches matters
  std::lock_guard lock(mu_);
  final_from_ = std::min(final_from_, begin);
  while (next_bucket_ < bounds_.size() && bounds_[next_bucket_].first >= final_from_) {
    queue_.push_back(next_bucket_++);
  }
  cv_.notify_all();
}

Status GradientReducer::finish() {
  // Exposed: how long backward's end waits for the buckets still to reduce.
  const auto start = std::chrono::steady_clock::now();
  ready(0, n_);
  std::unique_lock lock(mu_);
  finishing_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return done_ == bounds_.size(); });
  exposed_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return error_;
}

void GradientReducer::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::size_t k = queue_.front();
    queue_.pop_front();
    bool failed = !error_.ok();
    lock.unlock();
    auto start = Clock::now();
    // After a failure the rest is not reduced (the step is lost anyway), but every bucket
    // is still counted, so that finish() returns.
    Status s =
        failed ? Status{}
               : comm_.all_reduce(grads_ + bounds_[k].first, bounds_[k].second - bounds_[k].first);
    double took = std::chrono::duration<double>(Clock::now() - start).count();
    lock.lock();
    if (!s && error_.ok()) error_ = s;
    comm_seconds_ += took;
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace endure::dp
