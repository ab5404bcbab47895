#include "train/ckpt/shard_io.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {
namespace {

constexpr size_t kAlign = 4096;
constexpr size_t kBlock = 16u << 20;  // one write; 16 MiB measured best here (bench/ckpt)

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

// One read: small enough that its bytes are still in the cache when they are hashed right
// after, large enough that the reads cost little next to the copies.
constexpr size_t kReadPiece = 512u << 10;
// Reading streams, each copying from the page cache into the caller's memory and hashing
// what it copied. Measured per GiB here (bench/ckpt): two streams 0.54-0.59 s, steady; one
// 0.62-2.6 s; a plain 1 MiB read loop 0.56-2.0 s.
constexpr unsigned kReadStreams = 2;

// What a stream found wrong, the lowest chunk first, so that the error does not depend on
// which stream got there first.
struct Failure {
  std::mutex mu;
  std::atomic<bool> any{false};
  size_t chunk = SIZE_MAX;
  std::string message;

  void report(size_t at_chunk, std::string what) {
    std::lock_guard lock(mu);
    if (at_chunk < chunk) chunk = at_chunk, message = std::move(what);
    any = true;
  }
};

// Reads chunks [first, last) of the file into the caller's memory through its own file
// description (so that its readahead follows its own sequence), each piece hashed as soon as
// it lands, each chunk checked against its sum.
void read_chunks(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                 const json& sums, const SegmentMap& map, size_t first, size_t last,
                 Failure& failure) {
  const std::string what = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure.report(first, what + ": cannot open");
  const uint64_t begin = first * uint64_t{chunk_bytes},
                 end = std::min<uint64_t>(size, last * uint64_t{chunk_bytes});
  ::posix_fadvise(fd, static_cast<off_t>(begin), static_cast<off_t>(end - begin),
                  POSIX_FADV_SEQUENTIAL);
  XXH3_state_t* state = XXH3_createState();
  std::vector<iovec> iov;
  for (size_t chunk = first; chunk < last && !failure.any; ++chunk) {
    XXH3_64bits_reset(state);
    const uint64_t chunk_end = std::min<uint64_t>(size, (chunk + 1) * uint64_t{chunk_bytes});
    for (uint64_t pos = chunk * uint64_t{chunk_bytes}; pos < chunk_end;) {
      map.pieces(pos, static_cast<size_t>(std::min<uint64_t>(kReadPiece, chunk_end - pos)), iov);
      ssize_t n = ::preadv(fd, iov.data(), static_cast<int>(std::min<size_t>(iov.size(), IOV_MAX)),
                           static_cast<off_t>(pos));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failure.report(chunk, what + (n < 0 ? ": read: " + std::string(std::strerror(errno))
                                            : ": shorter than the manifest says"));
        break;
      }
      // What the read placed, hashed while it is still in the cache.
      size_t left = static_cast<size_t>(n);
      for (const iovec& v : iov) {
        size_t take = std::min(left, v.iov_len);
        XXH3_64bits_update(state, v.iov_base, take);
        if ((left -= take) == 0) break;
      }
      pos += static_cast<uint64_t>(n);
    }
    if (failure.any) break;
    if (sums[chunk] != digest_hex(XXH3_64bits_digest(state))) {
      failure.report(chunk, chunk_fails(what, chunk, chunk_bytes).message);
    }
  }
  XXH3_freeState(state);
  ::close(fd);
}

}  // namespace

SegmentMap::SegmentMap(const std::vector<Segment>& segments) : segments_(segments) {
  for (const Segment& s : segments) starts_.push_back(size_), size_ += s.size;
}

void SegmentMap::pieces(uint64_t offset, size_t len, std::vector<iovec>& out) const {
  out.clear();
  size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                 starts_.begin());
  for (i = i == 0 ? 0 : i - 1; len > 0 && i < segments_.size(); ++i) {
    uint64_t inside = offset - starts_[i];
    if (inside >= segments_[i].size) continue;
    size_t n = static_cast<size_t>(std::min<uint64_t>(len, segments_[i].size - inside));
    out.push_back({segments_[i].dst + inside, n});
    offset += n;
    len -= n;
  }
}

void SegmentMap::scatter(uint64_t offset, const uint8_t* data, size_t size) const {
  std::vector<iovec> iov;
  pieces(offset, size, iov);
  for (const iovec& v : iov) {
    std::memcpy(v.iov_base, data, v.iov_len);
    data += v.iov_len;
  }
}

Result<size_t> chunk_count(const std::string& what, uint64_t size, size_t chunk_bytes,
                           const json& sums) {
  if (chunk_bytes == 0) return make_error("CorruptCheckpoint", what + ": chunk size 0");
  const size_t chunks = size == 0 ? 1 : static_cast<size_t>((size + chunk_bytes - 1) / chunk_bytes);
  if (!sums.is_array() || sums.size() != chunks) {
    return make_error("CorruptCheckpoint", what + ": chunk count differs");
  }
  return chunks;
}

Error chunk_fails(const std::string& what, size_t chunk, size_t chunk_bytes) {
  return make_error("CorruptCheckpoint", fmt::format("{}: chunk {} (bytes {}..) fails its checksum",
                                                     what, chunk, chunk * uint64_t{chunk_bytes}));
}

Status read_verified(const std::filesystem::path& path, uint64_t size, size_t chunk_bytes,
                     const json& sums, const std::vector<Segment>& segments) {
  auto counted = chunk_count(path.string(), size, chunk_bytes, sums);
  if (!counted) return counted.error();
  const size_t chunks = *counted;
  // The page cache's readahead keeps the disk busy between reads: measured faster here
  // than O_DIRECT reads, even several in flight (bench/ckpt). The pages left behind are
  // clean, so the kernel takes them back at no cost when memory is wanted. Each stream
  // takes a run of whole chunks, so every chunk is hashed by one thread, in order.
  const SegmentMap map(segments);
  Failure failure;
  const size_t streams =
      std::min<size_t>({kReadStreams, std::max(1u, std::thread::hardware_concurrency()), chunks});
  std::vector<std::thread> others;
  for (size_t k = 1; k < streams; ++k) {
    others.emplace_back(read_chunks, std::cref(path), size, chunk_bytes, std::cref(sums),
                        std::cref(map), chunks * k / streams, chunks * (k + 1) / streams,
                        std::ref(failure));
  }
  read_chunks(path, size, chunk_bytes, sums, map, 0, chunks / streams, failure);
  for (auto& t : others) t.join();
  if (failure.any) return make_error("CorruptCheckpoint", failure.message);
  return {};
}

}  // namespace endure::ckpt
