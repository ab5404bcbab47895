#include "train/ckpt/streaming_checksums.h"

#include <xxhash.h>

#include <algorithm>
#include <thread>

#include "train/ckpt/format.h"
#include "train/ckpt/xxh3_run.h"

namespace endure::ckpt {

// Offsets here are from the chunk's start. A chunk of Xxh3Run::kMinLength bytes or fewer
// is never streamed: finish() hashes it whole.
struct StreamingChecksums::Chunk {
  size_t first = 0;             // where the run begins: 0, or past the prefix
  std::atomic<int> owner{-1};   // the thread feeding the run (-1: none yet)
  std::atomic<int> tailer{-1};  // the thread feeding the tail (-1: none yet)
  bool done = false;
  uint64_t digest = 0;
  Xxh3Run run;   // from the chunk's start, in order
  Xxh3Run tail;  // from where a second writer began, in order
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
    ch.tailer.store(-1, std::memory_order_relaxed);
    ch.done = false;
    ch.first = 0;
    if (const size_t length = chunk_length(c); length > Xxh3Run::kMinLength) ch.run.reset(length);
  }
  if (prefix > 0 && prefix < chunk_bytes && std::min(size, chunk_bytes) > Xxh3Run::kMinLength) {
    chunks_[0].run.update(base, prefix);
    chunks_[0].first = prefix;
  }
}

size_t StreamingChecksums::chunk_length(size_t c) const {
  return std::min(size_, (c + 1) * chunk_bytes_) - c * chunk_bytes_;
}

void StreamingChecksums::written(int thread, const void* data, size_t bytes, const void* copy) {
  const auto* p = static_cast<const uint8_t*>(data);
  const auto* from = copy ? static_cast<const uint8_t*>(copy) : p;  // the bytes at p, to read
  if (p < base_ || p >= base_ + size_ || bytes == 0) return;
  const size_t begin = static_cast<size_t>(p - base_), end = std::min(size_, begin + bytes);
  for (size_t c = begin / chunk_bytes_; c * chunk_bytes_ < end; ++c) {
    Chunk& ch = chunks_[c];
    const size_t chunk_begin = c * chunk_bytes_;
    const size_t length = chunk_length(c);
    const size_t a = std::max(begin, chunk_begin) - chunk_begin;
    const size_t b = std::min(end, chunk_begin + length) - chunk_begin;
    if (length <= Xxh3Run::kMinLength) continue;
    const uint8_t* bytes_at_a = from + (chunk_begin + a - begin);
    // The piece at the chunk's start claims the run; a piece elsewhere, the tail. Each goes
    // on with the pieces that follow it, from its own thread: every byte is reported once,
    // final, so a piece that closes a gap carries them on.
    int none = -1;
    if (ch.owner.load(std::memory_order_relaxed) == thread
            ? a == ch.run.end()
            : a == ch.first && ch.owner.compare_exchange_strong(none, thread)) {
      ch.run.update(bytes_at_a, b - a);
      if (b == length) {
        ch.digest = ch.run.digest();
        ch.done = true;
      }
      continue;
    }
    none = -1;
    if (ch.tailer.load(std::memory_order_relaxed) == thread) {
      if (a == ch.tail.end()) ch.tail.update(bytes_at_a, b - a);
    } else if (a > ch.first && ch.tailer.compare_exchange_strong(none, thread)) {
      ch.tail.reset(length, a);
      ch.tail.update(bytes_at_a, b - a);
    }
    // Any other piece is read again at finish(), past what the run and its tail hold.
  }
}

std::vector<std::string> StreamingChecksums::finish(unsigned threads) {
  // Each run takes on its tail first; what neither holds is read from memory, on helper
  // threads when there is more of it than a thread's start costs.
  size_t to_read = 0;
  for (size_t c = 0; c < count_; ++c) {
    Chunk& ch = chunks_[c];
    const size_t length = chunk_length(c);
    if (ch.done) continue;
    if (length <= Xxh3Run::kMinLength) {
      to_read += length;
      continue;
    }
    if (ch.tailer.load() >= 0 && ch.tail.start() == ch.run.end()) ch.run.append(ch.tail);
    to_read += length - ch.run.end();
  }
  std::vector<std::string> out(count_);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c; (c = next.fetch_add(1)) < count_;) {
      Chunk& ch = chunks_[c];
      if (!ch.done) {
        const uint8_t* chunk = base_ + c * chunk_bytes_;
        const size_t length = chunk_length(c);
        if (length <= Xxh3Run::kMinLength) {
          ch.digest = XXH3_64bits(chunk, length);
        } else {
          ch.run.update(chunk + ch.run.end(), length - ch.run.end());
          ch.digest = ch.run.digest();
        }
        ch.done = true;
      }
      out[c] = digest_hex(ch.digest);
    }
  };
  constexpr size_t kWorthAThread = 1u << 20;
  const size_t helpers_wanted = std::min<size_t>(std::max(threads, 1u), count_) - 1;
  std::vector<std::thread> helpers;
  for (size_t t = 0; t < helpers_wanted && to_read > kWorthAThread * (t + 1); ++t)
    helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
  return out;
}

}  // namespace endure::ckpt
