// The disk test: pseudo-random blocks written and synced, dropped from the page cache, read
// back and checked block by block; write and read bandwidth from the time in the calls.
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "agent/health/deep.h"
#include "agent/health/health_check.h"

namespace endure::agent::health {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kBlockBytes = 1024 * 1024;
constexpr std::uint64_t kDiskSeed = 0xbb67ae8584caa73bULL;
// On top of what the minimum bandwidth allows for a phase, before it is given up as slow.
constexpr double kSlackSeconds = 5.0;

// Block b's content: its own seed, so that a block read from the wrong place fails too.
void fill_block(std::vector<std::uint64_t>& words, long block) {
  std::uint64_t state = kDiskSeed ^ (static_cast<std::uint64_t>(block) * 0x9e3779b97f4a7c15ULL);
  for (auto& w : words) w = splitmix64(state);
}

// Closes the descriptor and removes the file however the check ends.
struct ScratchFile {
  std::string path;
  int fd = -1;
  ~ScratchFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// Seconds a phase of bytes may take: what min_mbps allows, plus the slack.
double phase_budget(double bytes, double min_mbps) {
  if (min_mbps <= 0) return 1e9;
  return bytes / (min_mbps * 1e6) + kSlackSeconds;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Writes, syncs and drops the file from the page cache; nullopt on success, else what
// failed. io_seconds: the time inside write and fsync, not in making the data.
std::optional<std::string> write_phase(ScratchFile& file, long blocks, double budget,
                                       std::vector<std::uint64_t>& sums, double& io_seconds) {
  std::vector<std::uint64_t> words(kBlockBytes / sizeof(std::uint64_t));
  auto start = Clock::now();
  for (long b = 0; b < blocks; ++b) {
    fill_block(words, b);
    sums[b] = fnv1a64(words.data(), kBlockBytes);
    const char* data = reinterpret_cast<const char*>(words.data());
    auto t0 = Clock::now();
    for (std::size_t done = 0; done < kBlockBytes;) {
      ssize_t n = ::write(file.fd, data + done, kBlockBytes - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_text("write", file.path);
      if (n == 0) return fmt::format("write {}: no progress", file.path);
      done += static_cast<std::size_t>(n);
    }
    auto t1 = Clock::now();
    io_seconds += seconds_between(t0, t1);
    if (b + 1 < blocks && seconds_between(start, t1) > budget) {
      return fmt::format("write {}: too slow, {} of {} MiB in {:.1f} s", file.path, b + 1, blocks,
                         seconds_between(start, t1));
    }
  }
  auto t0 = Clock::now();
  if (::fsync(file.fd) != 0) return errno_text("fsync", file.path);
  io_seconds += seconds_between(t0, Clock::now());
  // Without this the read would come from memory; the pages are clean after fsync.
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
  return std::nullopt;
}

// Reads every block back against its checksum; io_seconds: the time inside read.
std::optional<std::string> read_phase(ScratchFile& file, long blocks, double budget,
                                      const std::vector<std::uint64_t>& sums, long& bad_blocks,
                                      std::string& first_bad, double& io_seconds) {
  std::vector<char> block(kBlockBytes);
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto start = Clock::now();
  for (long b = 0; b < blocks; ++b) {
    std::size_t got = 0;
    auto t0 = Clock::now();
    while (got < kBlockBytes) {
      ssize_t n = ::read(file.fd, block.data() + got, kBlockBytes - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_text("read", file.path);
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    auto t1 = Clock::now();
    io_seconds += seconds_between(t0, t1);
    if (got < kBlockBytes) {
      return fmt::format("read {}: ends in block {} of {}", file.path, b, blocks);
    }
    if (fnv1a64(block.data(), kBlockBytes) != sums[b] && ++bad_blocks == 1) {
      first_bad = fmt::format("block {} (offset {} MiB) reads back different", b, b);
    }
    if (b + 1 < blocks && seconds_between(start, t1) > budget) {
      return fmt::format("read {}: too slow, {} of {} MiB in {:.1f} s", file.path, b + 1, blocks,
                         seconds_between(start, t1));
    }
  }
  return std::nullopt;
}

DeepResult run_disk_check(const DeepCheckOptions& options) {
  DeepResult result;
  result.check = "disk";
  long blocks = std::max(1L, options.disk_mib);
  result.metrics = {{"write_mbps", 0.0}, {"read_mbps", 0.0}, {"mib", blocks}, {"bad_blocks", 0}};
  double bytes = static_cast<double>(blocks) * kBlockBytes;
  double budget = phase_budget(bytes, options.min_disk_mbps);

  ScratchFile file;
  std::string path = options.local_path + "/.endure-deep-disk";
  file.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (file.fd < 0) {
    result.detail = errno_text("create", path);
    return result;
  }
  file.path = path;

  std::vector<std::uint64_t> sums(static_cast<std::size_t>(blocks));
  double write_seconds = 0;
  if (auto failed = write_phase(file, blocks, budget, sums, write_seconds)) {
    result.detail = *failed;
    return result;
  }
  // Close and reopen, so that the read shares nothing with the writer's descriptor; file
  // systems that defer write errors report them at close.
  int closed = ::close(file.fd);
  file.fd = -1;
  if (closed != 0) {
    result.detail = errno_text("close", path);
    return result;
  }
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) {
    result.detail = errno_text("reopen", path);
    return result;
  }
  long bad_blocks = 0;
  std::string first_bad;
  double read_seconds = 0;
  auto read_failed = read_phase(file, blocks, budget, sums, bad_blocks, first_bad, read_seconds);

  double write_mbps = write_seconds > 0 ? bytes / write_seconds / 1e6 : 0.0;
  double read_mbps = read_seconds > 0 ? bytes / read_seconds / 1e6 : 0.0;
  result.metrics["write_mbps"] = write_mbps;
  result.metrics["read_mbps"] = read_failed ? 0.0 : read_mbps;
  result.metrics["bad_blocks"] = bad_blocks;
  if (read_failed) {
    result.detail = *read_failed;
  } else if (bad_blocks > 0) {
    result.detail = fmt::format("{} of {} blocks in {} read back different; first: {}", bad_blocks,
                                blocks, path, first_bad);
  } else if (write_mbps < options.min_disk_mbps || read_mbps < options.min_disk_mbps) {
    result.detail = fmt::format(
        "{} MiB verified in {}, but bandwidth is below the minimum "
        "{:g} MB/s: write {:.1f} MB/s, read {:.1f} MB/s",
        blocks, options.local_path, options.min_disk_mbps, write_mbps, read_mbps);
  } else {
    result.passed = true;
    result.detail = fmt::format("{} MiB verified in {}: write {:.1f} MB/s, read {:.1f} MB/s",
                                blocks, options.local_path, write_mbps, read_mbps);
  }
  return result;
}

}  // namespace

DeepResult disk_check(const DeepCheckOptions& options) {
  return guarded_check("disk", [&] { return run_disk_check(options); });
}

}  // namespace endure::agent::health
