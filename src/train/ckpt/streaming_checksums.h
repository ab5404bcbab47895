// The checksums of a state kept in place, taken while it is being written: each chunk is
// hashed piece by piece as its writers report each piece final, while its bytes are still
// in cache, so that a save does not read the state from memory again. One writer feeds the
// chunk's run from its start, in order; a second writer that begins inside the chunk (the
// next thread's part, or the next buffer's start) feeds its tail, in order, which the run
// takes on at finish() when it ends where the tail began. Whatever else is written (by a
// third writer, out of order, or not reported) is hashed at finish() from memory, past
// what the run holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace endure::ckpt {

class StreamingChecksums {
 public:
  StreamingChecksums();
  ~StreamingChecksums();
  StreamingChecksums(const StreamingChecksums&) = delete;
  StreamingChecksums& operator=(const StreamingChecksums&) = delete;

  // Starts over on [base, base + size), of which the first `prefix` bytes (below
  // chunk_bytes) are final already.
  void reset(const uint8_t* base, size_t size, size_t chunk_bytes, size_t prefix);
  // Bytes [data, data + bytes) are final, written by `thread` (>= 0); `copy`, when given,
  // holds the same bytes where they are faster to read (in cache). Bytes outside the memory
  // given to reset() are ignored.
  void written(int thread, const void* data, size_t bytes, const void* copy = nullptr);
  // Every chunk's checksum (16 hex digits): those taken on the way, the others now, on
  // `threads` threads. REQUIRES: no written() call running.
  std::vector<std::string> finish(unsigned threads);
  const uint8_t* base() const { return base_; }

 private:
  struct Chunk;
  size_t chunk_length(size_t c) const;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t chunk_bytes_ = 1;
  size_t count_ = 0;
  std::unique_ptr<Chunk[]> chunks_;
  size_t allocated_ = 0;
};

}  // namespace endure::ckpt
