#include "controller/core/recovery_policy.h"

#include "controller/core/node_state.h"

namespace endure::controller {

std::string unhealthy_verdict(const std::string& reason, RecoveryAction action) {
  return "Unhealthy: " + reason + " -> " + api::name(action);
}

RecoveryAction action_for_fault(api::FaultKind kind) {
  using K = api::FaultKind;
  switch (kind) {
    case K::kHang:
    case K::kSlurmdGone:
    case K::kFsxHang:
    case K::kFsxError:
      return RecoveryAction::kReboot;
    // Every kind listed: a new one must be placed in the table (-Wswitch).
    case K::kCrash:
    case K::kAgent:
    case K::kXid:
    case K::kEcc:
    case K::kMce:
    case K::kFsError:
    case K::kDiskFull:
    case K::kLocalDisk:
    case K::kCpu:
    case K::kMemory:
    case K::kGpuCount:
    case K::kNvml:
    case K::kRebootFailed:
    case K::kDeepHealthCheck:
    case K::kSoftwareUpdate:
      return RecoveryAction::kReplace;
  }
  return RecoveryAction::kReplace;
}

RecoveryAction escalate(RecoveryAction action, int reboots) {
  if (action == RecoveryAction::kReboot && reboots >= kMaxReboots) return RecoveryAction::kReplace;
  return action;
}

std::optional<RecoveryAction> manual_action(const std::string& slurm_reason) {
  auto first = slurm_reason.find_first_not_of(" \t");
  auto last = slurm_reason.find_last_not_of(" \t");
  if (first == std::string::npos) return std::nullopt;
  std::string reason = slurm_reason.substr(first, last - first + 1);
  if (reason == kReplaceReason) return RecoveryAction::kReplace;
  if (reason == kRebootReason) return RecoveryAction::kReboot;
  return std::nullopt;
}

}  // namespace endure::controller
