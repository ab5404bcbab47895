// Local disk checks: free space while in service, and at creation that the local disk is
// there, writable and has room.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

// The free-space rule shared with the /fsx probe: a "disk-full" Finding (check `check`,
// detail: used, size and what is needed) when path has less than
// expect.disk_min_free_fraction of its size or less than expect.disk_min_free_mib MiB free
// for unprivileged users; a Finding of kind error_kind when statvfs fails; else nullopt.
// space, when given, gets the size and the free space statvfs reported (bytes).
struct DiskSpace {
  double size_bytes = -1;
  double free_bytes = -1;
};
std::optional<Finding> free_space_finding(const std::string& path, const NodeExpectations& expect,
                                          const std::string& check, FaultKind error_kind,
                                          DiskSpace* space = nullptr);

// Creates file, writes a line, fsyncs, closes, reads it back, compares and unlinks it.
// Returns what failed ("write /local/x: No space left on device"), or nullopt when all
// went well. Blocks as long as the file system does: run it under a BoundedProbe.
std::optional<std::string> file_round_trip(const std::string& file);

// Continuous: free space of expect.local_path (statvfs only, which local file systems
// answer from memory, so it does not block on I/O).
class DiskCheck : public HealthCheck {
 public:
  explicit DiskCheck(const NodeExpectations& expect) : expect_(expect) {}
  const char* name() const override { return "disk"; }
  // disk-full when short of space, local-disk when expect.local_path cannot be looked at.
  std::vector<Finding> run() override;
  // local_disk_size_bytes and local_disk_free_bytes of the last run.
  void gauges(json& out) const override;

 private:
  NodeExpectations expect_;
  DiskSpace space_;
};

// Basic: expect.local_path exists, is a folder, takes a write round trip of
// `.endure-health-probe` and has the free space DiskCheck wants. The probe runs in a
// bounded thread, since a dying disk can block fsync for minutes.
class BasicLocalDiskCheck : public HealthCheck {
 public:
  explicit BasicLocalDiskCheck(const NodeExpectations& expect,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : expect_(expect), timeout_(timeout) {}
  const char* name() const override { return "local-disk"; }
  // local-disk when missing, not a folder, not writable or too slow; disk-full when short
  // of space.
  std::vector<Finding> run() override;

 private:
  NodeExpectations expect_;
  std::chrono::milliseconds timeout_;
  BoundedProbe probe_;
};

}  // namespace endure::agent::health
