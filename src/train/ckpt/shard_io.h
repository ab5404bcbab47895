// Moving a shard between memory and a file at the disk's speed: writes O_DIRECT in large
// blocks (the page cache halves the bandwidth of a write of gigabytes here, see bench/ckpt),
// with a buffered fallback where the file system refuses O_DIRECT (tmpfs on older kernels);
// reads through the page cache, whose readahead beat O_DIRECT reads here.
#pragma once

#include <sys/uio.h>

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

// The caller's segments by the shard's file offsets they cover.
class SegmentMap {
 public:
  explicit SegmentMap(const std::vector<Segment>& segments);

  // Bytes the segments cover.
  uint64_t size() const { return size_; }
  // The pieces of the caller's memory that hold [offset, offset + len), in order, into out.
  void pieces(uint64_t offset, size_t len, std::vector<iovec>& out) const;
  // Copies `size` bytes of the shard, from `offset` on, to where they go.
  void scatter(uint64_t offset, const uint8_t* data, size_t size) const;

 private:
  const std::vector<Segment>& segments_;
  std::vector<uint64_t> starts_;  // each segment's first file offset
  uint64_t size_ = 0;
};

// How many chunk_bytes chunks a shard of `size` bytes has (an empty one has one), when
// `sums` holds a checksum for each; else why not, naming `what` (CorruptCheckpoint).
Result<size_t> chunk_count(const std::string& what, uint64_t size, size_t chunk_bytes,
                           const json& sums);

// The error of a chunk whose bytes fail their checksum.
Error chunk_fails(const std::string& what, size_t chunk, size_t chunk_bytes);

// Reads the file at path (size bytes) into the segments (which cover it exactly, in
// order), checking each chunk_bytes chunk against `sums` as its bytes arrive. Two streams
// (this thread and one more) each read a half of the chunks straight into the segments and
// hash each piece right after it lands, while it is still in the cache.
Status read_verified(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                     const json& sums, const std::vector<Segment>& segments);

}  // namespace endure::ckpt
