// The fault vocabulary, once: what an agent's check finds, what endured's own managers judge,
// what the recovery policy maps to an action, what /metrics tallies and what the drills
// make. On the wire (Finding.Kind, LoggedFinding.Kind) a kind is its name below.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace endure::api {

enum class FaultKind {
  // Found by endured itself
  kCrash,  // every process of the instance is gone
  kHang,   // processes, no heartbeat (a wedged kernel or agent)
  kAgent,  // the agent alone stopped answering
  // Found by the agent's checks (src/agent/health/)
  kSlurmdGone,  // slurmd's process is gone
  kFsxHang,     // a probe of /fsx did not return in time
  kFsxError,    // a probe of /fsx failed
  kXid,         // a GPU Xid (kernel log or NVML event)
  kEcc,         // an uncorrectable memory error
  kMce,         // a machine-check exception
  kFsError,     // a file system error in the kernel log
  kDiskFull,    // the local disk (or /fsx) below its free-space rule
  kLocalDisk,   // the local disk unusable
  kCpu,         // fewer CPUs than the instance type promises
  kMemory,      // less memory than the instance type promises
  kGpuCount,    // fewer GPUs than the instance type promises
  kNvml,        // NVML reports a GPU fault
  // Given by endured's managers
  kRebootFailed,     // a reboot did not bring the node back healthy
  kDeepHealthCheck,  // a deep health check failed
  kSoftwareUpdate,   // UpdateClusterSoftware's lifecycle scripts failed
};

// "crash", "hang", "slurmd-gone", "fsx-hang", ... as the wire and the verdicts spell them.
const char* name(FaultKind kind);
std::optional<FaultKind> parse_fault_kind(std::string_view text);
const std::vector<FaultKind>& all_fault_kinds();

// The codec's hooks (api/codec.h): a FaultKind member is its name on the wire.
bool parse_value(std::string_view text, FaultKind& out);
std::string value_names(FaultKind);  // "crash, hang, ..." for an error

}  // namespace endure::api
