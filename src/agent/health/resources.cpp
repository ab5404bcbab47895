#include "agent/health/resources.h"

#include <fmt/format.h>
#include <sched.h>

#include <cerrno>
#include <cmath>
#include <exception>
#include <fstream>
#include <string>

#include "api/node_gauges.h"
#include "common/log.h"

namespace endure::agent::health {

int usable_cpus() {
  // The kernel refuses a mask smaller than its own CPU count (EINVAL), so grow it until it
  // fits: the fixed cpu_set_t stops at 1024 CPUs.
  for (int ncpus = 1024; ncpus <= (1 << 20); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return 0;
    std::size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    int rc = ::sched_getaffinity(0, size, set);
    int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
    int err = errno;
    CPU_FREE(set);
    if (rc == 0) return count;
    if (err != EINVAL) return 0;
  }
  return 0;
}

void resource_gauges(json& out) {
  std::ifstream load("/proc/loadavg");
  double load1 = 0;
  if (load >> load1) out[api::gauge::kLoad1] = load1;
  std::ifstream in("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:") out[api::gauge::kMemTotalBytes] = kb * 1024;
    if (key == "MemAvailable:") out[api::gauge::kMemAvailableBytes] = kb * 1024;
  }
}

long mem_total_mib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:") return value / 1024;  // reported in kB
  }
  return -1;
}

std::vector<Finding> CpuCheck::run() {
  std::vector<Finding> findings;
  try {
    int found = usable_cpus();
    if (found < expected_) {
      findings.push_back(
          {FaultKind::kCpu, "cpu", fmt::format("expected {} CPUs, {} usable", expected_, found)});
    }
  } catch (const std::exception& e) {
    log::warn("cpu check: {}", e.what());
  }
  return findings;
}

std::vector<Finding> MemoryCheck::run() {
  std::vector<Finding> findings;
  try {
    if (expected_mib_ <= 0) return findings;
    long found = mem_total_mib();
    double needed = tolerance_ * static_cast<double>(expected_mib_);
    if (found < 0) {
      findings.push_back({FaultKind::kMemory, "memory", "cannot read MemTotal from /proc/meminfo"});
    } else if (static_cast<double>(found) < needed) {
      findings.push_back({FaultKind::kMemory, "memory",
                          fmt::format("expected {} MiB (at least {:.0f}), MemTotal is {} MiB",
                                      expected_mib_, std::ceil(needed), found)});
    }
  } catch (const std::exception& e) {
    log::warn("memory check: {}", e.what());
  }
  return findings;
}

}  // namespace endure::agent::health
