// Moving a shard between memory and a file at the disk's speed: writes O_DIRECT in large
// blocks (the page cache halves the bandwidth of a write of gigabytes here, see bench/ckpt),
// with a buffered fallback where the file system refuses O_DIRECT (tmpfs on older kernels);
// reads through the page cache, whose readahead beat O_DIRECT reads here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::ckpt {

// Writes data to path whole or not at all: a temporary file, fsync, rename, fsync of the
// folder. Runs the XXH3 of each chunk_bytes chunk on a second thread while the disk writes
// and returns them as 16 hex digits each in *checksums (when given).
Status write_durable(const std::filesystem::path& path, const uint8_t* data, size_t size,
                     size_t chunk_bytes = 0, std::vector<std::string>* checksums = nullptr);

// Where a run of a shard's bytes goes in the caller's memory, in file order.
struct Segment {
  uint8_t* dst;
  size_t size;
};

// Reads the file at path (size bytes) into the segments (which cover it exactly, in
// order), checking each chunk_bytes chunk against `sums` as its bytes arrive. Two streams
// (this thread and one more) each read a half of the chunks straight into the segments and
// hash each piece right after it lands, while it is still in the cache.
Status read_verified(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                     const json& sums, const std::vector<Segment>& segments);

}  // namespace endure::ckpt
