#include "train/ckpt/streaming_checksums.h"

// XXH3's code inlined here, so that it runs the vector code this file is built for
// (x86-64-v3: AVX2, twice SSE2's rate on bytes in cache); the digests are the same.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <thread>

#include "train/ckpt/format.h"

namespace endure::ckpt {

struct StreamingChecksums::Chunk {
  std::atomic<int> owner{-1};  // the thread hashing it (-1: none yet)
  size_t next = 0;             // the end of the bytes hashed so far, from the chunk's start
  bool done = false;
  uint64_t digest = 0;
  XXH3_state_t* state = XXH3_createState();
  ~Chunk() { XXH3_freeState(state); }
};

StreamingChecksums::StreamingChecksums() = default;
StreamingChecksums::~StreamingChecksums() = default;

void StreamingChecksums::reset(const uint8_t* base, size_t size, size_t chunk_bytes,
                               size_t prefix) {
  base_ = base;
  size_ = size;
  chunk_bytes_ = chunk_bytes;
  count_ = size == 0 ? 1 : (size + chunk_bytes - 1) / chunk_bytes;
  if (count_ > allocated_) {
    chunks_ = std::make_unique<Chunk[]>(count_);
    allocated_ = count_;
  }
  for (size_t c = 0; c < count_; ++c) {
    Chunk& ch = chunks_[c];
    ch.owner.store(-1, std::memory_order_relaxed);
    ch.next = c * chunk_bytes;
    ch.done = false;
    XXH3_64bits_reset(ch.state);
  }
  if (prefix > 0 && prefix < chunk_bytes && size > 0) {
    XXH3_64bits_update(chunks_[0].state, base, std::min(prefix, size));
    chunks_[0].next = std::min(prefix, size);
  }
}

void StreamingChecksums::written(int thread, const void* data, size_t bytes, const void* copy) {
  const auto* p = static_cast<const uint8_t*>(data);
  const auto* from = copy ? static_cast<const uint8_t*>(copy) : p;  // the bytes at p, to read
  if (p < base_ || p >= base_ + size_ || bytes == 0) return;
  const size_t begin = static_cast<size_t>(p - base_), end = std::min(size_, begin + bytes);
  for (size_t c = begin / chunk_bytes_; c * chunk_bytes_ < end; ++c) {
    Chunk& ch = chunks_[c];
    const size_t chunk_end = std::min(size_, (c + 1) * chunk_bytes_);
    const size_t a = std::max(begin, c * chunk_bytes_), b = std::min(end, chunk_end);
    if (ch.owner.load(std::memory_order_relaxed) != thread) {
      int none = -1;
      // Only a piece at the chunk's start (after any prefix) may claim it; the others'
      // pieces are read again at finish(), past the owner's run.
      if (a != ch.next || !ch.owner.compare_exchange_strong(none, thread)) continue;
    }
    // A gap ends the owner's run where it is; a piece that closes it carries the run on,
    // since every byte is reported once, final.
    if (a != ch.next) continue;
    XXH3_64bits_update(ch.state, from + (a - begin), b - a);
    ch.next = b;
    if (b == chunk_end) {
      ch.digest = XXH3_64bits_digest(ch.state);
      ch.done = true;
    }
  }
}

std::vector<std::string> StreamingChecksums::finish(unsigned threads) {
  std::vector<std::string> out(count_);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c; (c = next.fetch_add(1)) < count_;) {
      Chunk& ch = chunks_[c];
      if (!ch.done) {
        // The rest of the chunk past the run hashed on the way (the whole chunk if none).
        const size_t end = std::min(size_, (c + 1) * chunk_bytes_);
        XXH3_64bits_update(ch.state, base_ + ch.next, end - ch.next);
        ch.digest = XXH3_64bits_digest(ch.state);
        ch.next = end;
        ch.done = true;
      }
      out[c] = digest_hex(ch.digest);
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < std::min<size_t>(std::max(threads, 1u), count_); ++t)
    helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
  return out;
}

}  // namespace endure::ckpt
