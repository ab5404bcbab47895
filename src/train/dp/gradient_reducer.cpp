#include <algorithm>

#include "endure/dp.h"
#include "train/dp/comm_queue.h"

namespace endure::dp {

GradientReducer::GradientReducer(comm::Communicator& comm, float* grads, std::size_t n,
                                 std::size_t bucket_floats)
    : comm_(comm), grads_(grads), n_(n), final_from_(n), queue_(std::make_unique<CommQueue>()) {
  bucket_floats = std::max<std::size_t>(1, bucket_floats);
  for (std::size_t end = n; end > 0;) {
    std::size_t begin = end > bucket_floats ? end - bucket_floats : 0;
    bounds_.push_back({begin, end});
    end = begin;
  }
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::begin() {
  next_bucket_ = 0;
  final_from_ = n_;
  queue_->begin_step();
}

void GradientReducer::ready(std::size_t begin, std::size_t end) {
  (void)end;  // ranges come in order: only how far down the final part reaches matters
  final_from_ = std::min(final_from_, begin);
  while (next_bucket_ < bounds_.size() && bounds_[next_bucket_].first >= final_from_) {
    // A pair, not a structured binding: clang 14 (the sanitizer builds) cannot capture one.
    const std::pair<std::size_t, std::size_t> bucket = bounds_[next_bucket_++];
    queue_->push([this, bucket] {
      return comm_.all_reduce(grads_ + bucket.first, bucket.second - bucket.first);
    });
  }
}

Status GradientReducer::finish() {
  // Exposed: how long backward's end waits for the buckets still to reduce.
  ready(0, n_);
  return queue_->drain();
}

double GradientReducer::comm_seconds() const { return queue_->busy_seconds(); }
double GradientReducer::exposed_seconds() const { return queue_->waited_seconds(); }

}  // namespace endure::dp
