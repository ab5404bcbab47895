// Runs the group's OnCreate script once per instance and keeps its outcome on the node.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::agent {

inline constexpr int kTailLines = 20;

struct LifecycleResult {
  std::string status;  // InProgress, Succeeded, Failed
  int exit_code = -1;
  std::string last_lines;
  json to_json() const;
};

// Starts `bash OnCreate` in the lifecycle folder, in its own process group, with its
// output appended to the lifecycle log and the ENDURE_* variables set. Returns its pid.
Result<int> start_lifecycle(const api::AgentConfig& config);

// Runs the boot scripts (node::kBootScriptsDir/*, in name order) with their output appended
// to the lifecycle log; the outcome of the first that fails, or Succeeded.
LifecycleResult run_boot_scripts(const api::AgentConfig& config);

// The outcome from the script's wait status (or a timeout), with the log's last lines.
LifecycleResult lifecycle_outcome(int wait_status, bool timed_out, int timeout_seconds);

// The outcome kept from an earlier run on this node (a reboot does not re-run it).
std::optional<LifecycleResult> saved_lifecycle_result();
Status save_lifecycle_result(const LifecycleResult& result);

}  // namespace endure::agent
