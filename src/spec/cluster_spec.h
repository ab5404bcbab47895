// The cluster spec: a CreateCluster request, parsed and validated.
//
// Validation reports every problem at once, each as a field path in the request's own
// spelling ("InstanceGroups[1].InstanceCount") and the rule it breaks. Parsing never
// touches the file system or the store; where lifecycle sources live is the provider's
// business (see provider/).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "spec/scheduled_update.h"
#include "spec/shared_fs.h"
#include "spec/slurm_topology.h"
#include "spec/tiered_storage.h"

namespace endure::spec {

inline constexpr int kMaxInstanceGroups = 20;
inline constexpr int kMaxWarmSpares = 8;  // per group
inline constexpr int kMaxInstancesPerGroup = 64;  // keeps a group's ports and addresses in a block

struct FieldError {
  std::string path;  // "InstanceGroups[0].LifeCycleConfig.OnCreate"; "" for the whole request
  std::string rule;  // "is required", "must be one of Automatic, None", ...
};

// "path: rule; path: rule" (at most all of them).
std::string describe(const std::vector<FieldError>& errors);

struct LifeCycleConfig {
  std::string source_uri;  // SourceS3Uri: a local folder, file://..., or s3://...
  std::string on_create;   // OnCreate: a file name inside the source folder
};

struct InstanceGroupSpec {
  std::string name;           // InstanceGroupName
  std::string instance_type;  // InstanceType, one of instance_types()
  int instance_count = 0;     // InstanceCount
  LifeCycleConfig lifecycle;  // LifeCycleConfig
  int threads_per_core = 1;   // ThreadsPerCore: 1 or 2
  // SlurmConfig: the group's Slurm role (spec/slurm_topology.h). Absent: the lifecycle
  // folder's provisioning_parameters.json gives the roles.
  std::optional<SlurmGroupConfig> slurm;
  // ScheduledUpdateConfig: when endured updates the group's software by itself, in
  // rolling batches (controller/nodes/scheduled_updates.h). Absent: never.
  std::optional<ScheduledUpdateSpec> scheduled_update;
  // endure's own fields beside the cloud spec's:
  std::string host_pool;  // HostPool: the registered pool its nodes are drawn from; empty: local
  int warm_spares = 0;    // WarmSpares: nodes kept booted and checked, swapped in on a failure
};

struct ClusterSpec {
  std::string name;                         // ClusterName
  std::vector<InstanceGroupSpec> groups;    // InstanceGroups
  std::string node_recovery = "Automatic";  // NodeRecovery: Automatic | None
  // SharedFileSystem, endure's: what nodes on hosts mount at /fsx. Required with host
  // pools, refused without.
  std::optional<SharedFileSystemSpec> shared_fs;
  // TieredStorageConfig: the cluster memory tier. Absent: never given (the tier is off).
  std::optional<TieredStorageSpec> tiered_storage;
  // Orchestrator: how a hand-edited slurm.conf is treated (absent: Managed).
  std::optional<OrchestratorSpec> orchestrator;
  // NodeProvisioningMode Continuous: a launch that fails is tried again with backoff while
  // the cluster stays in service, instead of failing the cluster at its second failure.
  bool continuous = false;

  const InstanceGroupSpec* find_group(const std::string& group_name) const;
  // The request shape again (what describe-cluster echoes and the store keeps).
  json to_json() const;
};

// Checks a CreateCluster request. Empty when valid.
std::vector<FieldError> validate_cluster_spec(const json& request);

// Parses a CreateCluster request; on failure the Error is a ValidationException whose
// message is describe(validate_cluster_spec(request)).
Result<ClusterSpec> parse_cluster_spec(const json& request);

// An UpdateCluster request ({ClusterName, InstanceGroups[]?, NodeRecovery?,
// TieredStorageConfig?, Orchestrator?, NodeProvisioningMode?}) applied to the current spec.
// InstanceGroups,
// required unless a cluster-wide field comes without it, lists every group of the current
// spec, and only InstanceCount (and NodeRecovery, and TieredStorageConfig and Orchestrator,
// each replacing the cluster's whole) may change; the result is validated like a new spec.
Result<ClusterSpec> apply_cluster_update(const ClusterSpec& current, const json& request);

// The errors apply_cluster_update would report, as a list. Empty when the update applies.
std::vector<FieldError> validate_cluster_update(const ClusterSpec& current, const json& request);

// Reads obj[key] as a non-empty string, or records at path why it cannot: "is required"
// (only when required), "must be a string", "must not be empty". nullopt when absent or
// invalid. Shared with the provisioning checks so both files word their errors alike.
std::optional<std::string> read_string_field(const json& obj, const std::string& key,
                                             const std::string& path,
                                             std::vector<FieldError>& errors, bool required);

// Records "is not a known field; known: A, B" at prefix.key for every key of obj that is
// not in known. Shared for the same reason.
void check_known_keys(const json& obj, const std::string& prefix,
                      const std::vector<std::string_view>& known, std::vector<FieldError>& errors);

// The fields a typed message of api/ lists, for check_known_keys: one shape on both sides.
template <class Message>
std::vector<std::string_view> keys_of() {
  std::vector<std::string_view> out;
  const Message message{};
  Message::fields(message, [&](const char* key, const auto&) { out.emplace_back(key); });
  return out;
}

// A field's path under prefix ("TieredStorageConfig.Mode"); the key alone at the top.
std::string join_path(const std::string& prefix, std::string_view key);

}  // namespace endure::spec
