// bench/ckpt's S3 rows: persisting a committed step to an S3-compatible store and restoring
// it from there, through the checkpoint engine's S3 tier, timed as the tier runs them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "endure/checkpoint.h"

namespace endure::bench {

struct S3Figures {
  double persist_s = 0;  // the shard object from the disk folder, then the manifest object
  double restore_s = 0;  // load_into() with no faster tier: ranged GETs, every chunk verified
};

// The medians of `rounds` uploads of `step` (committed in `dir`, one rank) to `uri`
// (s3://BUCKET/PREFIX, the AWS environment's configuration) and restores from there into
// `into`, the page cache dropped before each (the peer, aws s3 cp, reads its file from disk).
Result<S3Figures> s3_figures(const std::filesystem::path& dir, int64_t step, const std::string& uri,
                             const std::vector<ckpt::MutableBuffer>& into, int rounds);

}  // namespace endure::bench
