#include "api/states.h"

namespace endure::api {
namespace {

template <class E>
struct Named {
  E value;
  const char* name;
};

// One list per enum: name(), parse_*() and all_*() all read it, so they cannot drift.
constexpr Named<ClusterStatus> kClusterNames[] = {
    {ClusterStatus::kCreating, "Creating"},
    {ClusterStatus::kInService, "InService"},
    {ClusterStatus::kUpdating, "Updating"},
    {ClusterStatus::kSystemUpdating, "SystemUpdating"},
    {ClusterStatus::kDeleting, "Deleting"},
    {ClusterStatus::kFailed, "Failed"},
    {ClusterStatus::kDeleted, "Deleted"},
};
constexpr Named<NodeStatus> kStatusNames[] = {
    {NodeStatus::kPending, "Pending"},
    {NodeStatus::kRunning, "Running"},
    {NodeStatus::kFailure, "Failure"},
    {NodeStatus::kShuttingDown, "ShuttingDown"},
    {NodeStatus::kSystemUpdating, "SystemUpdating"},
    {NodeStatus::kDeepHealthCheckInProgress, "DeepHealthCheckInProgress"},
    {NodeStatus::kWarmSpare, "WarmSpare"},
    {NodeStatus::kTerminated, "Terminated"},
};
constexpr Named<RecoveryAction> kActionNames[] = {
    {RecoveryAction::kReboot, "Reboot"},
    {RecoveryAction::kReplace, "Replace"},
};
constexpr Named<RecoveryStage> kStageNames[] = {
    {RecoveryStage::kNone, ""},
    {RecoveryStage::kRequested, "Requested"},
    {RecoveryStage::kDrained, "Drained"},
    {RecoveryStage::kRebooting, "Rebooting"},
    {RecoveryStage::kTerminating, "Terminating"},
    {RecoveryStage::kDone, "Done"},
};
constexpr Named<LifecycleStatus> kLifecycleNames[] = {
    {LifecycleStatus::kNotStarted, "NotStarted"}, {LifecycleStatus::kInProgress, "InProgress"},
    {LifecycleStatus::kSucceeded, "Succeeded"},   {LifecycleStatus::kFailed, "Failed"},
    {LifecycleStatus::kRebooting, "Rebooting"},
};
constexpr Named<Health> kHealthNames[] = {
    {Health::kUnknown, "Unknown"},
    {Health::kHealthy, "Healthy"},
    {Health::kUnhealthy, "Unhealthy"},
};
constexpr Named<TieredStorageMode> kTieredStorageModeNames[] = {
    {TieredStorageMode::kEnable, "Enable"},
    {TieredStorageMode::kDisable, "Disable"},
};
constexpr Named<SlurmNodeType> kSlurmNodeTypeNames[] = {
    {SlurmNodeType::kController, "Controller"},
    {SlurmNodeType::kLogin, "Login"},
    {SlurmNodeType::kCompute, "Compute"},
};
constexpr Named<SlurmConfigStrategy> kSlurmConfigStrategyNames[] = {
    {SlurmConfigStrategy::kManaged, "Managed"},
    {SlurmConfigStrategy::kOverwrite, "Overwrite"},
    {SlurmConfigStrategy::kMerge, "Merge"},
};

template <class E, size_t N>
const char* name_in(const Named<E> (&names)[N], E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";  // unreachable: every enumerator is listed
}

template <class E, size_t N>
std::optional<E> parse_in(const Named<E> (&names)[N], std::string_view text) {
  for (const auto& n : names) {
    if (text == n.name) return n.value;
  }
  return std::nullopt;
}

template <class E, size_t N>
std::vector<E> values_in(const Named<E> (&names)[N]) {
  std::vector<E> out;
  for (const auto& n : names) out.push_back(n.value);
  return out;
}

template <class E, size_t N>
std::string names_in(const Named<E> (&names)[N]) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

}  // namespace

const char* name(ClusterStatus status) { return name_in(kClusterNames, status); }
const char* name(NodeStatus status) { return name_in(kStatusNames, status); }
const char* name(RecoveryAction action) { return name_in(kActionNames, action); }
const char* name(RecoveryStage stage) { return name_in(kStageNames, stage); }
const char* name(LifecycleStatus status) { return name_in(kLifecycleNames, status); }
const char* name(Health health) { return name_in(kHealthNames, health); }
const char* name(TieredStorageMode mode) { return name_in(kTieredStorageModeNames, mode); }
const char* name(SlurmNodeType type) { return name_in(kSlurmNodeTypeNames, type); }
const char* name(SlurmConfigStrategy strategy) {
  return name_in(kSlurmConfigStrategyNames, strategy);
}

std::optional<ClusterStatus> parse_cluster_status(std::string_view text) {
  return parse_in(kClusterNames, text);
}
std::optional<NodeStatus> parse_node_status(std::string_view text) {
  return parse_in(kStatusNames, text);
}
std::optional<RecoveryAction> parse_recovery_action(std::string_view text) {
  return parse_in(kActionNames, text);
}
std::optional<RecoveryStage> parse_recovery_stage(std::string_view text) {
  return parse_in(kStageNames, text);
}
std::optional<LifecycleStatus> parse_lifecycle_status(std::string_view text) {
  return parse_in(kLifecycleNames, text);
}
std::optional<Health> parse_health(std::string_view text) { return parse_in(kHealthNames, text); }
std::optional<TieredStorageMode> parse_tiered_storage_mode(std::string_view text) {
  return parse_in(kTieredStorageModeNames, text);
}

bool parse_value(std::string_view text, TieredStorageMode& out) {
  auto mode = parse_tiered_storage_mode(text);
  if (mode) out = *mode;
  return mode.has_value();
}
std::string value_names(TieredStorageMode) { return names_in(kTieredStorageModeNames); }

// The same hooks for the other wire enums: one template, a line each.
template <class E, size_t N>
bool parse_into(const Named<E> (&names)[N], std::string_view text, E& out) {
  auto value = parse_in(names, text);
  if (value) out = *value;
  return value.has_value();
}
bool parse_value(std::string_view text, SlurmNodeType& out) {
  return parse_into(kSlurmNodeTypeNames, text, out);
}
bool parse_value(std::string_view text, SlurmConfigStrategy& out) {
  return parse_into(kSlurmConfigStrategyNames, text, out);
}
std::string value_names(SlurmNodeType) { return names_in(kSlurmNodeTypeNames); }
std::string value_names(SlurmConfigStrategy) { return names_in(kSlurmConfigStrategyNames); }

const std::vector<ClusterStatus>& all_cluster_statuses() {
  static const auto values = values_in(kClusterNames);
  return values;
}
const std::vector<NodeStatus>& all_node_statuses() {
  static const auto values = values_in(kStatusNames);
  return values;
}
const std::vector<RecoveryStage>& all_recovery_stages() {
  static const auto values = values_in(kStageNames);
  return values;
}
const std::vector<LifecycleStatus>& all_lifecycle_statuses() {
  static const auto values = values_in(kLifecycleNames);
  return values;
}
const std::vector<Health>& all_healths() {
  static const auto values = values_in(kHealthNames);
  return values;
}

}  // namespace endure::api
