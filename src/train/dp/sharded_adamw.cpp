#include <algorithm>

#include "endure/zero.h"

namespace endure::zero {

std::vector<model::ParamView> shard_views(const std::vector<model::ParamView>& all,
                                          std::size_t begin, std::size_t end) {
  std::vector<model::ParamView> out;
  for (const auto& p : all) {
    std::size_t b = std::max(begin, p.offset), e = std::min(end, p.offset + p.numel());
    if (b >= e) continue;
    const int piece = static_cast<int>(e - b);
    std::vector<int> shape =
        p.shape.size() >= 2 ? std::vector<int>{1, piece} : std::vector<int>{piece};
    out.push_back({p.name, b - begin, shape});
  }
  return out;
}

ShardedAdamW::ShardedAdamW(comm::Communicator& comm, const model::AdamWConfig& config,
                           std::size_t n, const std::vector<model::ParamView>& params,
                           model::Backend* backend)
    : comm_(comm),
      n_(n),
      range_(comm::shard_range(n, comm.world(), comm.rank())),
      adamw_(config, range_.count, shard_views(params, range_.offset, range_.offset + range_.count),
             backend) {}

Status ShardedAdamW::update(float* params, const float* grads, float lr) {
  adamw_.update(params + range_.offset, grads + range_.offset, lr);
  // Each rank's part, gathered in place: the input is this rank's own slice of the output.
  std::vector<float> mine(params + range_.offset, params + range_.offset + range_.count);
  return comm_.all_gather(mine.data(), n_, params);
}

}  // namespace endure::zero
