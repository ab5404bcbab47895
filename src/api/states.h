// The states a cluster and a node are in, and the cluster's settings that take one of a few
// words, as the cloud API names them, with endure's own additions marked. endured's store
// keeps each as its name (the strings below) and converts at its edge; every other part
// holds the enums. name() gives the stored string and parse_*() reads it back (nullopt for
// a string that names no value).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace endure::api {

// ClusterStatus, plus Deleted (a row whose cluster is gone, kept for the record).
enum class ClusterStatus {
  kCreating,
  kInService,
  kUpdating,
  kSystemUpdating,
  kDeleting,
  kFailed,
  kDeleted,
};

// The cloud API's ClusterInstanceStatus, less NotFound (a BatchAddClusterNodes answer, never
// stored), plus Terminated (the status of a row whose instance is gone) and WarmSpare.
enum class NodeStatus {
  kPending,                    // being launched or rebooted
  kRunning,                    // in service
  kFailure,                    // launch or lifecycle failed (or unhealthy, NodeRecovery None)
  kShuttingDown,               // being terminated (scale down, delete, replacement)
  kSystemUpdating,             // UpdateClusterSoftware at work on it
  kDeepHealthCheckInProgress,  // in a StartClusterHealthCheck, in a maintenance reservation
  kWarmSpare,                  // endure's: booted, checked, in no partition, ready to swap in
  kTerminated,                 // gone; the row stays for the record
};

// What a recovery does: the cloud's "Action:Reboot" / "Action:Replace".
enum class RecoveryAction { kReboot, kReplace };

// Where a recovery stands. kNone: none under way.
enum class RecoveryStage { kNone, kRequested, kDrained, kRebooting, kTerminating, kDone };

// What the node's lifecycle scripts reported: OnCreate on a new instance, the boot scripts
// after a reboot (kRebooting until they report).
enum class LifecycleStatus { kNotStarted, kInProgress, kSucceeded, kFailed, kRebooting };

enum class Health { kUnknown, kHealthy, kUnhealthy };

// TieredStorageConfig.Mode: whether the cluster memory tier is on.
enum class TieredStorageMode { kEnable, kDisable };

// An instance group's SlurmConfig.NodeType: the Slurm role its nodes play.
enum class SlurmNodeType { kController, kLogin, kCompute };

// Orchestrator.Slurm.SlurmConfigStrategy: what endure does with a slurm.conf a person
// edited on the controller when it next writes the file. Managed: endure owns the
// partitions and refuses to write over an edit (an event says so); Overwrite: its own file
// replaces the edit; Merge: partitions the person added are kept beside endure's.
enum class SlurmConfigStrategy { kManaged, kOverwrite, kMerge };

// "InService", "Pending", "Replace", "" for RecoveryStage::kNone, ...
const char* name(ClusterStatus status);
const char* name(NodeStatus status);
const char* name(RecoveryAction action);
const char* name(RecoveryStage stage);
const char* name(LifecycleStatus status);
const char* name(Health health);
const char* name(TieredStorageMode mode);
const char* name(SlurmNodeType type);
const char* name(SlurmConfigStrategy strategy);

std::optional<ClusterStatus> parse_cluster_status(std::string_view text);
std::optional<NodeStatus> parse_node_status(std::string_view text);
std::optional<RecoveryAction> parse_recovery_action(std::string_view text);
std::optional<RecoveryStage> parse_recovery_stage(std::string_view text);  // "" is kNone
std::optional<LifecycleStatus> parse_lifecycle_status(std::string_view text);
std::optional<Health> parse_health(std::string_view text);
std::optional<TieredStorageMode> parse_tiered_storage_mode(std::string_view text);

// The codec's hooks (api/codec.h): such a member is its name on the wire.
bool parse_value(std::string_view text, TieredStorageMode& out);
bool parse_value(std::string_view text, SlurmNodeType& out);
bool parse_value(std::string_view text, SlurmConfigStrategy& out);
std::string value_names(TieredStorageMode);  // "Enable, Disable", for an error
std::string value_names(SlurmNodeType);
std::string value_names(SlurmConfigStrategy);

// Every value, in declaration order: for tests and for rendering.
const std::vector<ClusterStatus>& all_cluster_statuses();
const std::vector<NodeStatus>& all_node_statuses();
const std::vector<RecoveryStage>& all_recovery_stages();
const std::vector<LifecycleStatus>& all_lifecycle_statuses();
const std::vector<Health>& all_healths();

}  // namespace endure::api
