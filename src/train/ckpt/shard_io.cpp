#include "train/ckpt/shard_io.h"

#include <fcntl.h>
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
constexpr size_t kBlock = 16u << 20;  // one I/O; 16 MiB measured best here (bench/ckpt)

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

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBlock = std::unique_ptr<uint8_t, AlignedFree>;

AlignedBlock aligned_block() { return AlignedBlock(static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBlock))); }

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

Status read_verified(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                     const json& sums, const std::vector<Segment>& segments) {
  const std::string what = path.string();
  if (chunk_bytes == 0) return make_error("CorruptCheckpoint", what + ": chunk size 0");
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  bool direct = fd >= 0;
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("CorruptCheckpoint", what + ": cannot open");

  // Three blocks in a ring: the reader fills one while this thread drains another.
  constexpr int kRing = 3;
  AlignedBlock ring[kRing] = {aligned_block(), aligned_block(), aligned_block()};
  size_t filled[kRing] = {};
  bool full[kRing] = {};
  std::mutex mu;
  std::condition_variable cv;
  bool failed = false, cancelled = false;
  const uint64_t blocks = (size + kBlock - 1) / kBlock;
  std::thread reader([&] {
    for (uint64_t b = 0; b < blocks; ++b) {
      int i = static_cast<int>(b % kRing);
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !full[i] || cancelled; });
        if (cancelled) return;
      }
      size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock, size - b * kBlock)), got = 0;
      while (got < want) {
        // Aligned length even for the tail: O_DIRECT stops at the end of the file.
        size_t ask = (want - got + kAlign - 1) / kAlign * kAlign;
        ssize_t n = ::pread(fd, ring[i].get() + got, ask, static_cast<off_t>(b * kBlock + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EINVAL && direct) {
          // O_DIRECT opened but refused (some FUSE mounts): read through the page cache.
          int buffered = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
          if (buffered >= 0) {
            ::close(fd);
            fd = buffered;
            direct = false;
            continue;
          }
        }
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      std::lock_guard lock(mu);
      filled[i] = std::min(got, want);
      full[i] = true;
      if (got < want) failed = true;
      cv.notify_all();
      if (failed) return;
    }
  });

  Status result;
  size_t seg = 0, seg_done = 0, chunk_index = 0;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  uint64_t pos = 0;
  auto finish_chunk = [&]() {
    std::string got = fmt::format("{:016x}", XXH3_64bits_digest(state));
    if (chunk_index >= sums.size() || sums[chunk_index] != got) {
      result = make_error("CorruptCheckpoint", fmt::format("{}: chunk {} (bytes {}..) fails its checksum",
                                                           what, chunk_index, chunk_index * chunk_bytes));
    }
    ++chunk_index;
    XXH3_64bits_reset(state);
  };
  for (uint64_t b = 0; b < blocks && result; ++b) {
    int i = static_cast<int>(b % kRing);
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return full[i] || failed; });
      if (!full[i] || filled[i] < std::min<uint64_t>(kBlock, size - b * kBlock)) {
        result = make_error("CorruptCheckpoint", what + ": shorter than the manifest says");
        break;
      }
    }
    const uint8_t* src = ring[i].get();
    size_t n = filled[i], off = 0;
    while (off < n && result) {
      // Up to the end of this chunk, then verify it.
      size_t in_chunk = chunk_bytes - static_cast<size_t>(pos % chunk_bytes);
      size_t take = std::min(n - off, in_chunk);
      XXH3_64bits_update(state, src + off, take);
      for (size_t copied = 0; copied < take;) {
        if (seg >= segments.size()) break;
        size_t c = std::min(take - copied, segments[seg].size - seg_done);
        std::memcpy(segments[seg].dst + seg_done, src + off + copied, c);
        copied += c;
        seg_done += c;
        if (seg_done == segments[seg].size) ++seg, seg_done = 0;
      }
      off += take;
      pos += take;
      if (pos % chunk_bytes == 0 || pos == size) finish_chunk();
    }
    std::lock_guard lock(mu);
    full[i] = false;
    cv.notify_all();
  }
  if (result && size == 0) finish_chunk();
  if (result && chunk_index != sums.size()) result = make_error("CorruptCheckpoint", what + ": chunk count differs");
  {
    std::lock_guard lock(mu);
    cancelled = true;
    cv.notify_all();
  }
  reader.join();
  XXH3_freeState(state);
  ::close(fd);
  return result;
}

}  // namespace endure::ckpt
