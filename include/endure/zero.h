// endure's sharded training (ZeRO), built on data parallelism (dp.h): the state the ranks
// would each hold whole is split among them instead. Stage 1, here: AdamW's two moments.
// Each rank keeps m and v for its own part of the flat buffer (comm::shard_range), updates
// only that part of the parameters from the summed gradients, and the parts are then
// all-gathered, so every rank holds the whole updated model again. Per parameter in fp32:
// 4 (params) + 4 (grads) + 8/N (moments) bytes instead of 16. The update is AdamW's own
// kernel on the same numbers, so the parameters are bitwise those of unsharded AdamW.
#pragma once

#include <cstddef>
#include <vector>

#include "common/result.h"
#include "endure/comm.h"
#include "endure/model.h"

namespace endure::zero {

// The tensors of all that lie in [begin, end) of the flat buffer, clipped to it, with
// offsets from begin: what AdamW takes for that part. A matrix's piece keeps two
// dimensions ({1, piece}), so it decays as the matrix does.
std::vector<model::ParamView> shard_views(const std::vector<model::ParamView>& all,
                                          std::size_t begin, std::size_t end);

class ShardedAdamW {
 public:
  // n: the flat buffer's length; params: the model's named_parameters(); backend: as
  // AdamW's. The communicator must outlive the optimizer.
  ShardedAdamW(comm::Communicator& comm, const model::AdamWConfig& config, std::size_t n,
               const std::vector<model::ParamView>& params, model::Backend* backend = nullptr);

  // One step on this rank's part of params from grads (the whole buffer, already summed
  // over the ranks), then the all-gather of every part into params.
  Status update(float* params, const float* grads, float lr);

  // This rank's part and its optimizer (m, v and the step count: what a checkpoint saves).
  comm::Range range() const { return range_; }
  model::AdamW& local() { return adamw_; }

 private:
  comm::Communicator& comm_;
  std::size_t n_;
  comm::Range range_;
  model::AdamW adamw_;
};

}  // namespace endure::zero
