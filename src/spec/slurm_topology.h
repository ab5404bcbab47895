// The Slurm topology in the request, the cloud API's newer shape: each instance group's
// SlurmConfig and the cluster's Orchestrator.
//
//   "InstanceGroups": [{..., "SlurmConfig": {"NodeType": "Controller"}},
//                      {..., "SlurmConfig": {"NodeType": "Login"}},
//                      {..., "SlurmConfig": {"NodeType": "Compute", "PartitionNames": ["dev"]}}],
//   "Orchestrator": {"Slurm": {"SlurmConfigStrategy": "Merge"}}
//
// Given on every group, SlurmConfig says which group plays which Slurm role, as
// provisioning_parameters.json does in the lifecycle folder (spec/provisioning.h turns it
// into the same roles); given with such a file, the two must agree. The rules: every group
// or none; one Controller group of one instance; at most one Login group; at least one
// Compute group; PartitionNames (0 or 1 name, the cloud's pattern and length) on Compute
// groups only, kDefaultPartition when none is named; WarmSpares on Compute groups only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/messages.h"
#include "common/json.h"

namespace endure::spec {

struct FieldError;   // spec/cluster_spec.h
struct ClusterSpec;  // likewise

// The partition of a Compute group that names none: the name the public samples use.
inline constexpr const char* kDefaultPartition = "dev";
inline constexpr size_t kMaxPartitionNameLength = 1024;  // the cloud's bound

struct SlurmGroupConfig {
  api::SlurmNodeType node_type = api::SlurmNodeType::kCompute;  // NodeType
  std::vector<std::string> partition_names;                     // PartitionNames, 0 or 1

  // The partition a Compute group's nodes join; "" for the other types.
  std::string partition() const;
  api::ClusterSlurmConfig to_api() const;
  bool operator==(const SlurmGroupConfig&) const = default;
};

// Orchestrator as given: {"Slurm": {"SlurmConfigStrategy"?}}.
struct OrchestratorSpec {
  std::optional<api::SlurmConfigStrategy> strategy;  // Slurm.SlurmConfigStrategy
  api::ClusterOrchestrator to_api() const;
  bool operator==(const OrchestratorSpec&) const = default;
};

// The strategy in force: the one given, else Managed.
api::SlurmConfigStrategy slurm_config_strategy(const std::optional<OrchestratorSpec>& given);

// Reads group["SlurmConfig"] (nullopt when absent or invalid), recording each broken rule
// at its path ("InstanceGroups[2].SlurmConfig.PartitionNames[0]").
std::optional<SlurmGroupConfig> read_slurm_config(const json& group, const std::string& group_path,
                                                  std::vector<FieldError>& errors);

// Reads request["Orchestrator"] likewise; Eks is refused (endure runs Slurm).
std::optional<OrchestratorSpec> read_orchestrator(const json& request,
                                                  std::vector<FieldError>& errors);

// The rules across groups (see the top of this file), for a spec whose groups were read.
void check_slurm_topology(const ClusterSpec& spec, std::vector<FieldError>& errors);

}  // namespace endure::spec
