#include "agent/health/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "api/node_gauges.h"
#include "common/log.h"

namespace endure::agent::health {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string human_bytes(double bytes) {
  if (bytes >= 1024.0 * kMiB) return fmt::format("{:.1f} GiB", bytes / (1024.0 * kMiB));
  return fmt::format("{:.0f} MiB", bytes / kMiB);
}

// What the local-disk probe finds; runs in the probe thread, so it touches only its copy.
std::optional<Finding> probe_local_disk(const NodeExpectations& expect) {
  const std::string& path = expect.local_path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Finding{FaultKind::kLocalDisk, "local-disk", errno_text("stat", path)};
  }
  if (!S_ISDIR(st.st_mode)) {
    return Finding{FaultKind::kLocalDisk, "local-disk", path + ": not a folder"};
  }
  if (auto failed = file_round_trip(path + "/.endure-health-probe")) {
    return Finding{FaultKind::kLocalDisk, "local-disk", *failed};
  }
  return free_space_finding(path, expect, "local-disk", FaultKind::kLocalDisk);
}

}  // namespace

std::optional<Finding> free_space_finding(const std::string& path, const NodeExpectations& expect,
                                          const std::string& check, FaultKind error_kind,
                                          DiskSpace* space) {
  struct statvfs sv {};
  if (::statvfs(path.c_str(), &sv) != 0) {
    return Finding{error_kind, check, errno_text("statvfs", path)};
  }
  double unit = static_cast<double>(sv.f_frsize != 0 ? sv.f_frsize : sv.f_bsize);
  double size = static_cast<double>(sv.f_blocks) * unit;
  double free = static_cast<double>(sv.f_bavail) * unit;  // what non-root writers get
  if (space) *space = {size, free};
  double need_fraction = expect.disk_min_free_fraction * size;
  double need_mib = static_cast<double>(expect.disk_min_free_mib) * kMiB;
  if (free >= need_fraction && free >= need_mib) return std::nullopt;
  double used = std::max(0.0, size - static_cast<double>(sv.f_bfree) * unit);
  return Finding{FaultKind::kDiskFull, check,
                 fmt::format("{}: {} used of {}, {} free; needs {:.0f} % ({}) and {} MiB free",
                             path, human_bytes(used), human_bytes(size), human_bytes(free),
                             expect.disk_min_free_fraction * 100.0, human_bytes(need_fraction),
                             expect.disk_min_free_mib)};
}

std::optional<std::string> file_round_trip(const std::string& file) {
  // Unique content, so that reading back a stale copy of an earlier probe is caught.
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::string content =
      fmt::format("endure health probe pid {} at {} ns\n", ::getpid(),
                  std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());

  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_text("create", file);
  auto fail = [&](const char* what) {
    std::string text = errno_text(what, file);
    if (fd >= 0) ::close(fd);
    ::unlink(file.c_str());
    return text;
  };
  for (std::size_t done = 0; done < content.size();) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync");
  // Network file systems report deferred write errors at close.
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("close");

  fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("reopen");
  std::string back(content.size() + 1, '\0');
  std::size_t got = 0;
  while (got < back.size()) {
    ssize_t n = ::read(fd, back.data() + got, back.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("read");
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  fd = -1;
  back.resize(got);
  if (back != content) {
    ::unlink(file.c_str());
    return file + ": read back differs from what was written";
  }
  if (::unlink(file.c_str()) != 0) return errno_text("unlink", file);
  return std::nullopt;
}

std::vector<Finding> DiskCheck::run() {
  std::vector<Finding> findings;
  try {
    space_ = {};
    if (auto f = free_space_finding(expect_.local_path, expect_, "disk", FaultKind::kLocalDisk,
                                    &space_)) {
      findings.push_back(std::move(*f));
    }
  } catch (const std::exception& e) {
    log::warn("disk check: {}", e.what());
  }
  return findings;
}

void DiskCheck::gauges(json& out) const {
  if (space_.size_bytes < 0) return;
  out[api::gauge::kLocalDiskSizeBytes] = space_.size_bytes;
  out[api::gauge::kLocalDiskFreeBytes] = space_.free_bytes;
}

std::vector<Finding> BasicLocalDiskCheck::run() {
  std::vector<Finding> findings;
  try {
    findings = probe_.run_or_report_hang(
        [expect = expect_] {
          std::vector<Finding> found;
          if (auto f = probe_local_disk(expect)) found.push_back(std::move(*f));
          return found;
        },
        timeout_, FaultKind::kLocalDisk, "local-disk", expect_.local_path);
  } catch (const std::exception& e) {
    log::warn("local disk check: {}", e.what());
  }
  return findings;
}

}  // namespace endure::agent::health
