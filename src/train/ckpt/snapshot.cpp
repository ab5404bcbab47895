#include "train/ckpt/snapshot.h"

#include <pthread.h>
#include <sched.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "train/ckpt/format.h"

namespace endure::ckpt {
namespace {

// Copied and hashed in pieces that stay in the L2 cache between the copy and the hash.
constexpr size_t kPiece = 256u << 10;

}  // namespace

Snapshot::Snapshot(std::string header, const std::vector<Buffer>& buffers, uint8_t* dst,
                   size_t chunk_bytes, bool hash)
    : header_(std::move(header)),
      layout_(json::array()),
      dst_(dst),
      chunk_bytes_(chunk_bytes),
      hash_(hash) {
  sources_.push_back({reinterpret_cast<const uint8_t*>(header_.data()), 0, header_.size()});
  size_ = header_.size();
  for (const auto& b : buffers) {
    layout_.push_back({{"name", b.name}, {"offset", size_}, {"size", b.size}});
    if (b.size) sources_.push_back({static_cast<const uint8_t*>(b.data), size_, b.size});
    size_ += b.size;
  }
  // A copy without checksums is one chunk, each buffer one memcpy: for copies of this
  // size the library's memcpy streams its stores past the cache, which pieces would not.
  if (!hash_) chunk_bytes_ = std::max<size_t>(size_, 1);
  chunks_ = (size_ + chunk_bytes_ - 1) / chunk_bytes_;
  sums_.assign(chunks_, 0);
}

void Snapshot::copy_chunk(size_t chunk) {
  const size_t begin = chunk * chunk_bytes_, end = std::min(size_, begin + chunk_bytes_);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(
      hash_ ? XXH3_createState() : nullptr, &XXH3_freeState);
  if (state) XXH3_64bits_reset(state.get());
  // The first source that ends past `begin`; sources are in shard order.
  auto it = std::upper_bound(sources_.begin(), sources_.end(), begin,
                             [](size_t pos, const Source& s) { return pos < s.offset + s.size; });
  for (size_t pos = begin; pos < end && it != sources_.end(); ++it) {
    const size_t stop = std::min(end, it->offset + it->size);
    while (pos < stop) {
      const size_t n = state ? std::min(kPiece, stop - pos) : stop - pos;
      std::memcpy(dst_ + pos, it->data + (pos - it->offset), n);
      if (state) XXH3_64bits_update(state.get(), dst_ + pos, n);
      pos += n;
    }
  }
  if (state) sums_[chunk] = XXH3_64bits_digest(state.get());
}

void Snapshot::work() {
  for (size_t c; (c = next_.fetch_add(1)) < chunks_;) {
    copy_chunk(c);
    std::lock_guard lock(mu_);
    if (++done_ == chunks_) cv_.notify_all();
  }
}

void Snapshot::finish() {
  work();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return done_ == chunks_; });
}

std::vector<std::string> Snapshot::checksums() const {
  std::vector<std::string> out;
  if (!hash_) return out;
  out.reserve(chunks_);
  for (uint64_t s : sums_) out.push_back(digest_hex(s));
  return out;
}

void run_at_idle_priority() {
  sched_param param{};
  (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
}

}  // namespace endure::ckpt
