// provisioning_parameters.json: which instance group plays which Slurm role, in the
// convention of the public lifecycle-script samples:
//   {"version": "1.0.0", "workload_manager": "slurm",
//    "controller_group": "controller", "login_group": "login",
//    "worker_groups": [{"instance_group_name": "worker", "partition_name": "dev"}]}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "spec/cluster_spec.h"

namespace endure::spec {

inline constexpr const char* kProvisioningFile = "provisioning_parameters.json";

struct WorkerGroup {
  std::string instance_group_name;
  std::string partition_name;
};

enum class NodeRole { kController, kLogin, kWorker };
const char* role_name(NodeRole role);  // "controller", "login", "worker"

struct ProvisioningParameters {
  std::string version = "1.0.0";
  std::string workload_manager = "slurm";
  std::string controller_group;
  std::string login_group;  // optional: "" when the cluster has no login group
  std::vector<WorkerGroup> worker_groups;

  // The role of an instance group; every group of a valid spec has exactly one. A name
  // that is neither the controller nor the login group reads as a worker.
  NodeRole role_of(const std::string& group_name) const;
  // The partition of a worker group ("" for other groups).
  std::string partition_of(const std::string& group_name) const;
  json to_json() const;
};

// Checks the file's JSON against the spec: the controller group exists and has
// InstanceCount 1, the login group (if any) exists, each worker group exists and names a
// valid Slurm partition, no group has two roles, every group has a role. Error paths are
// prefixed with "provisioning_parameters.json:" (e.g.
// "provisioning_parameters.json:worker_groups[0].partition_name").
std::vector<FieldError> validate_provisioning(const json& params, const ClusterSpec& spec);

Result<ProvisioningParameters> parse_provisioning(const json& params, const ClusterSpec& spec);

// The roles the groups' SlurmConfig gives (spec/slurm_topology.h), in this file's shape;
// nullopt when the spec has none. The spec was validated, so every rule holds.
std::optional<ProvisioningParameters> roles_from_slurm_config(const ClusterSpec& spec);

// Where the roles from SlurmConfig and those of a provisioning_parameters.json differ, one
// error per group naming both sources; empty when they agree.
std::vector<FieldError> role_disagreements(const ClusterSpec& spec,
                                           const ProvisioningParameters& from_config,
                                           const ProvisioningParameters& from_file);

}  // namespace endure::spec
