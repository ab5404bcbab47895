// What endured does about an unhealthy node: the documented table by fault kind, the
// escalation rule, and the manual reasons operators set in Slurm. Pure functions, so the
// policy is unit-tested without a cluster.
//
//   fault kind                         action   why
//   crash (every process gone)         Replace  the machine is gone
//   hang (processes, no heartbeat)     Reboot   a reboot clears a wedged kernel or agent
//   slurmd-gone                        Reboot   the node is fine, its daemons are not
//   fsx-hang, fsx-error                Reboot   remounting the shared file system
//   xid, ecc, mce, fs-error            Replace  hardware faults come back after a reboot
//   disk-full, local-disk              Replace  a reboot keeps the local disk; a new one is empty
//   cpu, memory, gpu-count, nvml       Replace  the machine is not what its type promises
//   reboot-failed                      Replace  the reboot did not bring it back healthy
//   agent, deep-health-check,
//   software-update                    Replace
// A node rebooted kMaxReboots times within kRebootWindowSeconds is replaced instead.
#pragma once

#include <optional>
#include <string>

#include "api/fault_kind.h"
#include "api/states.h"

namespace endure::controller {

using api::RecoveryAction;

inline const char* action_name(RecoveryAction action) { return api::name(action); }
inline std::optional<RecoveryAction> parse_action(const std::string& name) {
  return api::parse_recovery_action(name);
}

// The verdict a health judgement, a failed deep check or a failed update records:
// "Unhealthy: <reason> -> <Action>".
std::string unhealthy_verdict(const std::string& reason, RecoveryAction action);

inline constexpr int kMaxReboots = 2;
inline constexpr double kRebootWindowSeconds = 3600;

RecoveryAction action_for_fault(api::FaultKind kind);

// The action after escalation: a Reboot of a node already rebooted `reboots` times
// (within the window) becomes a Replace.
RecoveryAction escalate(RecoveryAction action, int reboots);

// The manual requests, exactly as the cloud service spells them: the Slurm node reason
// "Action:Replace" or "Action:Reboot" (surrounding whitespace ignored, nothing else:
// "action:replace" or "Action: Replace" do nothing).
std::optional<RecoveryAction> manual_action(const std::string& slurm_reason);

inline constexpr const char* kReplaceReason = "Action:Replace";
inline constexpr const char* kRebootReason = "Action:Reboot";

// Prefix of the reasons endured itself gives nodes it drains, so that it resumes only
// nodes it (or an operator's Action:) took out of service.
inline constexpr const char* kDrainReasonPrefix = "endure:";

}  // namespace endure::controller
