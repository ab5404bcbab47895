// slurmd check (workers): the slurmd named by its pid file is alive.
#pragma once

#include <string>
#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

class SlurmdCheck : public HealthCheck {
 public:
  explicit SlurmdCheck(const NodeExpectations& expect) : pid_file_(expect.slurmd_pid_file) {}
  const char* name() const override { return "slurmd"; }
  // slurmd-gone when the pid file is missing or unreadable, or its pid has no
  // /proc/<pid>, is a zombie, or is another program (a reused pid: comm is not "slurmd").
  std::vector<Finding> run() override;

 private:
  std::string pid_file_;
};

}  // namespace endure::agent::health
