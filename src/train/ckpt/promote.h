// A step only the node-local tiers hold, copied to the shared folder: what a run that
// resumed from such a step and saved nothing since ends with (Checkpointer::flush()).
#pragma once

#include <vector>

#include "common/result.h"
#include "endure/checkpoint.h"

namespace endure::ckpt {

class S3Tier;

// Of `steps` (list()'s, newest first), the newest valid one reaches the shared folder:
// nothing when a durable tier (shared, s3) holds it already; else this rank's shard and
// descriptor are copied there from the fastest node-local copy, verified against the
// descriptor's checksums as they are written, rank 0 commits the step, and the S3 tier
// uploads it. A copy that fails its checksums is logged and the next older step tried.
Status copy_newest_to_shared(const Options& o, const std::vector<CheckpointInfo>& steps,
                             S3Tier* s3);

}  // namespace endure::ckpt
