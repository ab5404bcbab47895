// /fsx check: a bounded probe of the shared file system, which hangs (NFS, Lustre, FUSE)
// far more often than it fails outright.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

// A probe of /fsx: returns what it found (nullopt: healthy). It runs in a detached thread
// and gets its own copy of the expectations.
using FsxProbe = std::function<std::optional<Finding>(const NodeExpectations&)>;

// The real probe: stat(fsx_path), then a write, fsync, read-back and unlink of
// `<fsx_path>/.endure-health/<instance_id>` (making the folder when missing) → fsx-error with
// the errno text on failure; with check_space, also the free-space rule → disk-full.
std::optional<Finding> probe_fsx(const NodeExpectations& expect, bool check_space);

class FsxCheck : public HealthCheck {
 public:
  // probe: empty for the real one (probe_fsx); tests inject one that blocks.
  explicit FsxCheck(const NodeExpectations& expect, bool check_space = false, FsxProbe probe = {});
  const char* name() const override { return "fsx"; }
  // Waits at most expect.fsx_timeout_ms for the probe: fsx-hang when it does not finish, or
  // while an earlier probe is still stuck (no second one is started then); fsx-error or
  // disk-full from the probe otherwise.
  std::vector<Finding> run() override;
  // fsx_probe_seconds: how long the last run waited for its probe (the timeout when hung).
  void gauges(json& out) const override;

 private:
  NodeExpectations expect_;
  FsxProbe probe_fn_;
  BoundedProbe probe_;
  double probe_seconds_ = -1;
};

}  // namespace endure::agent::health
