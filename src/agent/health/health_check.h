// Health checks run by endure-agent on its own node: one check per file behind this
// interface. The agent reports what they find; endured decides what to do about it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/messages.h"
#include "api/node_contract.h"
#include "common/json.h"

namespace endure::agent::health {

// A fault a node sees in itself: its kind (the key of endured's recovery table), the check
// that found it ("kernel-log", "disk", ...) and, for people, the log line or the numbers.
// The wire's own message, so that what a check finds is what endured reads.
using api::FaultKind;
using api::Finding;

// "<what> <path>: <errno's text>", for a finding's detail after a failed system call.
std::string errno_text(const char* what, const std::string& path);

class HealthCheck {
 public:
  virtual ~HealthCheck() = default;
  virtual const char* name() const = 0;
  // Looks once and returns the faults present now (empty: healthy). Returns within its
  // own time bound, even when what it probes hangs.
  virtual std::vector<Finding> run() = 0;
  // What its last run() measured, as node gauges (api/node_gauges.h keys) for endured's
  // /metrics: the same numbers the check judged by, never measured again. Default: none.
  virtual void gauges(json& out) const { (void)out; }
};

// What a healthy node looks like, from its instance type; thresholds are documented in
// the README's health-check table.
struct NodeExpectations {
  std::string instance_id;  // names its /fsx probe file: unique, and kept by a swapped-in spare
  int cpus = 1;
  int memory_mib = 0;
  int gpus = 0;
  bool runs_slurmd = false;  // worker nodes
  std::string local_path = node::kLocalDiskPath;
  std::string fsx_path = node::kSharedFsPath;
  std::string kmsg_path = "/dev/kmsg";
  std::string slurmd_pid_file = node::kSlurmdPidFile;
  std::string nvml_library = "libnvidia-ml.so.1";
  double disk_min_free_fraction = 0.05;  // disk-full below 5 % free ...
  long disk_min_free_mib = 64;           // ... or below 64 MiB free
  int fsx_timeout_ms = 5000;             // a /fsx probe slower than this is a hang
  double memory_tolerance = 0.95;        // MemTotal may be 5 % under the type's memory
};

// Checks run once at creation, before the lifecycle script (and so before slurmd):
// CPUs, memory, local disk and /fsx mounted, writable and with space, GPU count.
std::vector<std::unique_ptr<HealthCheck>> basic_checks(const NodeExpectations& expect);

// Checks run every few seconds while the node is in service: disk space, /fsx probe,
// slurmd alive (workers), NVML counters (GPU types). The kernel log is not among them: the
// agent follows it as a stream (KernelLogCheck::wait_for_records).
std::vector<std::unique_ptr<HealthCheck>> continuous_checks(const NodeExpectations& expect);

// Runs checks and gathers their findings.
std::vector<Finding> run_all(const std::vector<std::unique_ptr<HealthCheck>>& checks);

// The node's gauges after a round of run_all: every check's, plus the load average and
// memory (resources.h), as the heartbeat's Metrics object.
json gather_gauges(const std::vector<std::unique_ptr<HealthCheck>>& checks);

// Runs a blocking probe (file-system I/O, an NVML call) in a detached thread and waits for
// it at most a timeout. A call stuck in the kernel (hung NFS, dying disk, wedged driver)
// cannot be interrupted, so its thread is left behind; at most one is outstanding at a
// time, and a new probe starts only once the stuck one has returned. The thread shares only
// a reference-counted state with this object, so it may outlive it.
class BoundedProbe {
 public:
  using Probe = std::function<std::vector<Finding>()>;
  enum class Outcome {
    kDone,        // the probe returned in time; findings are what it found
    kTimedOut,    // the probe started now did not return in time
    kStillStuck,  // an earlier probe has still not returned; nothing was started
  };
  struct Result {
    Outcome outcome = Outcome::kDone;
    std::vector<Finding> findings;
    std::chrono::milliseconds stuck_for{0};  // kTimedOut, kStillStuck: since the probe began
  };

  BoundedProbe();
  // Starts probe (unless one is still stuck) and waits for it at most timeout. A probe that
  // throws counts as one that found nothing; the exception is logged.
  Result run(Probe probe, std::chrono::milliseconds timeout);
  // run(), with a probe that does not return in time reported as a Finding of hang_kind by
  // check: "probe of <what> did not finish in N ms", or "an earlier probe of <what> has
  // not returned for N ms" while it is still stuck.
  std::vector<Finding> run_or_report_hang(Probe probe, std::chrono::milliseconds timeout,
                                          FaultKind hang_kind, const std::string& check,
                                          const std::string& what);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool running = false;  // a probe's thread has not returned yet
    std::vector<Finding> findings;
    std::chrono::steady_clock::time_point started;
  };
  std::shared_ptr<State> state_;
};

}  // namespace endure::agent::health
