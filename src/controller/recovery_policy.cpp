#include "controller/recovery_policy.h"

#include "controller/node_state.h"

namespace endure::controller {

std::string unhealthy_verdict(const std::string& reason, RecoveryAction action) {
  return "Unhealthy: " + reason + " -> " + api::name(action);
}

RecoveryAction action_for_fault(const std::string& kind) {
  if (kind == "hang" || kind == "slurmd-gone" || kind == "fsx-hang" || kind == "fsx-error") {
    return RecoveryAction::kReboot;
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
