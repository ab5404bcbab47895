#include "train/ckpt/shard_io.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {
namespace {

constexpr size_t kAlign = 4096;
constexpr size_t kBlock = 16u << 20;      // one write; 16 MiB measured best here (bench/ckpt)
constexpr size_t kReadBlock = 4u << 20;   // one read; with readahead, 1-16 MiB measured alike

Error io_error(const std::string& what) {
  return make_error("IOError", what + ": " + std::strerror(errno));
}

Status write_all(int fd, const uint8_t* data, size_t size, uint64_t offset, const std::string& what) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, data + done, std::min(size - done, kBlock), static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error("write " + what);
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

Status write_durable(const std::filesystem::path& path, const uint8_t* data, size_t size,
                     size_t chunk_bytes, std::vector<std::string>* checksums) {
  std::thread hasher;
  if (checksums) hasher = std::thread([&] { *checksums = chunk_checksums(data, size, chunk_bytes); });
  auto tmp = path;
  tmp += ".tmp";
  const std::string what = tmp.string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Status s = fd < 0 ? Status(io_error("create " + what)) : Status();
  if (s) {
    // The block-aligned body through O_DIRECT, the tail through the page cache.
    size_t direct = reinterpret_cast<uintptr_t>(data) % kAlign == 0 ? size / kAlign * kAlign : 0;
    int dfd = direct ? ::open(tmp.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC) : -1;
    if (dfd < 0) direct = 0;
    if (direct) s = write_all(dfd, data, direct, 0, what);
    if (dfd >= 0) ::close(dfd);
    // A file system that opens with O_DIRECT but refuses its writes (some FUSE mounts):
    // the whole file through the page cache instead.
    if (!s && errno == EINVAL) direct = 0, s = Status();
    if (s) s = write_all(fd, data + direct, size - direct, direct, what);
    if (s && ::fsync(fd) != 0) s = io_error("fsync " + what);
    ::close(fd);
    if (s && ::rename(tmp.c_str(), path.c_str()) != 0) s = io_error("rename " + what);
    if (!s) ::unlink(tmp.c_str());
  }
  if (s) s = fs::sync_dir(path.parent_path());
  if (hasher.joinable()) hasher.join();
  return s;
}

namespace {

// A position in the caller's segments, walked in file order.
class SegmentCursor {
 public:
  explicit SegmentCursor(const std::vector<Segment>& segments) : segments_(segments) {}

  // Calls f(pointer, bytes) for each piece of the next `len` bytes and moves past them.
  template <class F>
  void walk(size_t len, F&& f) {
    while (len > 0 && index_ < segments_.size()) {
      const Segment& s = segments_[index_];
      size_t n = std::min(len, s.size - offset_);
      if (n > 0) f(s.dst + offset_, n);
      len -= n;
      offset_ += n;
      if (offset_ == s.size) ++index_, offset_ = 0;
    }
  }

 private:
  const std::vector<Segment>& segments_;
  size_t index_ = 0, offset_ = 0;
};

// How far the reader has filled the caller's memory, shared with the verifier.
struct ReadProgress {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t ready = 0;
  bool failed = false, cancelled = false;
  int error = 0;  // errno of a failed read; 0 when the file ended early
};

// Reads [0, size) of fd into the segments, block by block, publishing each block.
void read_into(int fd, uint64_t size, const std::vector<Segment>& segments, ReadProgress& progress) {
  SegmentCursor cursor(segments);
  std::vector<iovec> iov;
  for (uint64_t pos = 0; pos < size;) {
    {
      std::lock_guard lock(progress.mu);
      if (progress.cancelled) return;
    }
    iov.clear();
    SegmentCursor at = cursor;
    at.walk(static_cast<size_t>(std::min<uint64_t>(kReadBlock, size - pos)),
            [&](uint8_t* p, size_t n) { iov.push_back({p, n}); });
    ssize_t n = ::preadv(fd, iov.data(), static_cast<int>(std::min<size_t>(iov.size(), IOV_MAX)),
                         static_cast<off_t>(pos));
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lock(progress.mu);
    if (n <= 0) {
      progress.failed = true;
      progress.error = n < 0 ? errno : 0;
      progress.cv.notify_all();
      return;
    }
    cursor.walk(static_cast<size_t>(n), [](uint8_t*, size_t) {});
    pos += static_cast<uint64_t>(n);
    progress.ready = pos;
    progress.cv.notify_all();
  }
}

}  // namespace

Status read_verified(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                     const json& sums, const std::vector<Segment>& segments) {
  const std::string what = path.string();
  if (chunk_bytes == 0) return make_error("CorruptCheckpoint", what + ": chunk size 0");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("CorruptCheckpoint", what + ": cannot open");
  // Through the page cache, whose readahead keeps the disk busy between reads: measured
  // faster here than O_DIRECT reads, even several in flight (bench/ckpt). The pages left
  // behind are clean, so the kernel takes them back at no cost when memory is wanted.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  ReadProgress progress;
  std::thread reader([&] { read_into(fd, size, segments, progress); });

  // This thread verifies what the reader has placed, chunk by chunk, as it arrives.
  Status result;
  SegmentCursor cursor(segments);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  size_t chunk_index = 0;
  auto finish_chunk = [&]() {
    std::string got = digest_hex(XXH3_64bits_digest(state));
    if (chunk_index >= sums.size() || sums[chunk_index] != got) {
      result = make_error("CorruptCheckpoint", fmt::format("{}: chunk {} (bytes {}..) fails its checksum",
                                                           what, chunk_index, chunk_index * chunk_bytes));
    }
    ++chunk_index;
    XXH3_64bits_reset(state);
  };
  for (uint64_t pos = 0; pos < size && result;) {
    uint64_t ready;
    int error;
    {
      std::unique_lock lock(progress.mu);
      progress.cv.wait(lock, [&] { return progress.ready > pos || progress.failed; });
      ready = progress.ready;
      error = progress.error;
    }
    if (ready <= pos) {
      result = make_error("CorruptCheckpoint", what + (error ? ": read: " + std::string(std::strerror(error))
                                                             : ": shorter than the manifest says"));
      break;
    }
    while (pos < ready && result) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(ready - pos, chunk_bytes - pos % chunk_bytes));
      cursor.walk(take, [&](uint8_t* p, size_t n) { XXH3_64bits_update(state, p, n); });
      pos += take;
      if (pos % chunk_bytes == 0 || pos == size) finish_chunk();
    }
  }
  if (result && size == 0) finish_chunk();
  if (result && chunk_index != sums.size()) result = make_error("CorruptCheckpoint", what + ": chunk count differs");
  {
    std::lock_guard lock(progress.mu);
    progress.cancelled = true;
  }
  reader.join();
  XXH3_freeState(state);
  ::close(fd);
  return result;
}

}  // namespace endure::ckpt
