// endure's data-parallel training: every rank holds the whole model and a part of each
// batch; after backward, every rank holds the sum of the ranks' gradients.
//
// The gradients are cut into buckets of a fixed size (counted from the end of the flat
// buffer, the order in which backward finishes them), and each bucket is all-reduced on
// the reducer's own thread as soon as backward has made all of it final, while backward
// goes on with the layers before it: communication hidden behind compute. The buckets and
// each all-reduce are fixed for a world size, so a run is bitwise deterministic.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/result.h"
#include "endure/comm.h"

namespace endure::dp {

class CommQueue;  // src/train/dp/comm_queue.h

class GradientReducer {
 public:
  // grads: n floats (the model's flat gradient buffer), reduced in buckets of
  // bucket_floats (> 0). The communicator must outlive the reducer and carry no other
  // collective while a step is being reduced.
  GradientReducer(comm::Communicator& comm, float* grads, std::size_t n, std::size_t bucket_floats);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Starts a step: no bucket is final yet.
  void begin();
  // grads[begin, end) are final for this step (the model's GradsReady): every bucket now
  // wholly final is handed to the reducer's thread. Ranges come from the end of the buffer
  // towards its start.
  void ready(std::size_t begin, std::size_t end);
  // Reduces whatever is left, waits for every bucket, and returns the first collective's
  // error, if any. The gradients are then the sum over the ranks.
  Status finish();

  std::size_t buckets() const { return bounds_.size(); }
  // Seconds the reducer's thread spent in collectives during the last step, and how long
  // finish() waited for them after backward (what was not hidden behind it).
  double comm_seconds() const;
  double exposed_seconds() const;

 private:
  comm::Communicator& comm_;
  float* grads_;
  std::size_t n_;
  std::vector<std::pair<std::size_t, std::size_t>> bounds_;  // bucket k: from the end
  std::size_t next_bucket_ = 0;                              // the next to hand over
  std::size_t final_from_ = 0;                               // [final_from_, n) is final
  std::unique_ptr<CommQueue> queue_;                         // the buckets' all-reduces
};

}  // namespace endure::dp
