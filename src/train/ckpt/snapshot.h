// A save's copy of the caller's buffers into a staging slot, chunk by chunk (the checksum
// chunks of the shard), each chunk's XXH3 taken while its bytes are still in cache: one
// pass over memory instead of a copy and then a hash. Several threads may share the work:
// an overlapped save's copier runs at idle priority, on cycles training leaves unused, and
// a caller that needs the copy finished takes the chunks left itself instead of waiting
// for a thread the scheduler may keep off the cores.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "endure/checkpoint.h"

namespace endure::ckpt {

class Snapshot {
 public:
  // Copies `header` then `buffers`, back to back, into dst (their total size). The buffers'
  // memory must stay unchanged until finish() returns. hash false: copy only, one chunk.
  Snapshot(std::string header, const std::vector<Buffer>& buffers, uint8_t* dst, size_t chunk_bytes,
           bool hash);

  // Takes and copies chunks until none is left to take.
  void work();
  // work(), then waits for the chunks other threads took: the copy is done on return.
  void finish();
  // The layout written ({name, offset, size} of each buffer) and, once finish() returned
  // on some thread and with hash, every chunk's checksum (16 hex digits).
  const json& layout() const { return layout_; }
  std::vector<std::string> checksums() const;

 private:
  struct Source {
    const uint8_t* data;
    size_t offset;  // in the shard
    size_t size;
  };
  void copy_chunk(size_t chunk);

  std::string header_;
  std::vector<Source> sources_;
  json layout_;
  uint8_t* dst_;
  size_t size_ = 0;
  size_t chunk_bytes_;
  size_t chunks_;
  bool hash_;
  std::vector<uint64_t> sums_;
  std::atomic<size_t> next_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  size_t done_ = 0;  // guarded by mu_
};

// Puts the calling thread at idle priority (SCHED_IDLE): it runs when a core would
// otherwise idle. Best effort: a system that refuses leaves it as it was.
void run_at_idle_priority();

}  // namespace endure::ckpt
