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
  // Looked at twice, half a second apart: a slurmd restarted on purpose (a warm spare taking
  // a worker's name) is gone only for a moment.
  std::vector<Finding> run() override;

 private:
  std::vector<Finding> look() const;

  std::string pid_file_;
};

}  // namespace endure::agent::health
