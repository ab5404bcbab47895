// CPU and memory checks: the node has what its instance type promises.
#pragma once

#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

// Number of CPUs this process may run on (its affinity mask, which a cpuset narrows);
// 0 when it cannot be read.
int usable_cpus();

// MemTotal from /proc/meminfo in MiB; -1 when it cannot be read.
long mem_total_mib();

// The 1-minute load average and MemTotal/MemAvailable in bytes (api/node_gauges.h keys),
// from /proc/loadavg and /proc/meminfo; a value that cannot be read is left out.
void resource_gauges(json& out);

class CpuCheck : public HealthCheck {
 public:
  explicit CpuCheck(const NodeExpectations& expect) : expected_(expect.cpus) {}
  const char* name() const override { return "cpu"; }
  // cpu when fewer CPUs are usable than expect.cpus.
  std::vector<Finding> run() override;

 private:
  int expected_;
};

class MemoryCheck : public HealthCheck {
 public:
  explicit MemoryCheck(const NodeExpectations& expect)
      : expected_mib_(expect.memory_mib), tolerance_(expect.memory_tolerance) {}
  const char* name() const override { return "memory"; }
  // memory when MemTotal is under memory_tolerance * memory_mib MiB (firmware and the
  // kernel keep some back), or cannot be read. Nothing when memory_mib is 0.
  std::vector<Finding> run() override;

 private:
  int expected_mib_;
  double tolerance_;
};

}  // namespace endure::agent::health
