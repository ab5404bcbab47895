// Messages of the cluster actions: CreateCluster, DescribeCluster, ListClusters,
// UpdateCluster, DeleteCluster. Include messages.h, not this file.
//
// Every message: to_json() writes its fields in wire order, leaving out empty optionals;
// from_json() reads them, ignores fields it does not know, and fails with a
// ValidationException naming the field and the rule ("ClusterName: must be a string").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/fields.h"
#include "api/states.h"

namespace endure::api {

// A message with no fields: {} (ListClusters' request, an agent report's reply, ...).
struct Empty {
  static constexpr const char* kName = "Empty";
  template <class S, class V>
  static void fields(S&, V&&) {}
  json to_json() const;
  static Result<Empty> from_json(const json& in);
};

struct LifeCycleConfig {
  static constexpr const char* kName = "LifeCycleConfig";
  std::string source_s3_uri;  // a local folder, file://..., or s3://...
  std::string on_create;      // a file name inside that folder
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kSourceS3Uri, s.source_s3_uri);
    v(field::kOnCreate, s.on_create);
  }
  json to_json() const;
  static Result<LifeCycleConfig> from_json(const json& in);
};

// The cluster memory tier, in the cloud's shape: Enable gives every node a memory store
// holding InstanceMemoryAllocationPercentage (0 to 100) of its memory for checkpoints
// (absent or 0 with Enable: spec::kDefaultMemoryPercent). Read by endured through
// spec::read_tiered_storage, which words the same rules and reports all of them.
struct TieredStorageConfig {
  static constexpr const char* kName = "TieredStorageConfig";
  TieredStorageMode mode = TieredStorageMode::kDisable;
  std::optional<int> instance_memory_allocation_percentage;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kMode, s.mode);
    v(field::kInstanceMemoryAllocationPercentage, s.instance_memory_allocation_percentage);
  }
  bool operator==(const TieredStorageConfig&) const = default;
  Status check() const;
  json to_json() const;
  static Result<TieredStorageConfig> from_json(const json& in);
};

// An instance group's Slurm role, in the cloud's shape: NodeType and at most one partition
// (a Compute group's; none: kDefaultPartition). Read by endured through
// spec::read_slurm_topology, which words the rules (spec/slurm_topology.h).
struct ClusterSlurmConfig {
  static constexpr const char* kName = "ClusterSlurmConfig";
  SlurmNodeType node_type = SlurmNodeType::kCompute;
  std::optional<std::vector<std::string>> partition_names;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeType, s.node_type);
    v(field::kPartitionNames, s.partition_names);
  }
  bool operator==(const ClusterSlurmConfig&) const = default;
  json to_json() const;
  static Result<ClusterSlurmConfig> from_json(const json& in);
};

// Orchestrator.Slurm: how endure treats a slurm.conf a person edited (absent: Managed).
struct OrchestratorSlurmConfig {
  static constexpr const char* kName = "OrchestratorSlurmConfig";
  std::optional<SlurmConfigStrategy> slurm_config_strategy;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kSlurmConfigStrategy, s.slurm_config_strategy);
  }
  bool operator==(const OrchestratorSlurmConfig&) const = default;
  json to_json() const;
  static Result<OrchestratorSlurmConfig> from_json(const json& in);
};

// The cluster's Orchestrator: Slurm only (Eks is refused by the spec's rules, never
// silently served as Slurm).
struct ClusterOrchestrator {
  static constexpr const char* kName = "ClusterOrchestrator";
  std::optional<OrchestratorSlurmConfig> slurm;
  std::optional<json> eks;  // read so the refusal can name it
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kSlurm, s.slurm);
    v(field::kEks, s.eks);
  }
  json to_json() const;
  static Result<ClusterOrchestrator> from_json(const json& in);
};

// An instance group as CreateCluster and UpdateCluster take it. Only the types are
// checked here; the spec's rules (names, counts, known instance types, unknown fields)
// are spec::validate_cluster_spec's.
struct InstanceGroupSpec {
  static constexpr const char* kName = "InstanceGroupSpec";
  std::string instance_group_name;
  std::string instance_type;
  int instance_count = 0;
  LifeCycleConfig life_cycle_config;
  std::optional<int> threads_per_core;
  std::optional<std::string> execution_role;     // accepted, means nothing here
  std::optional<json> instance_storage_configs;  // accepted, means nothing here
  std::optional<std::string> host_pool;          // endure's: the pool its nodes come from
  std::optional<int> warm_spares;                // endure's: spares kept ready (default 0)
  std::optional<ClusterSlurmConfig> slurm_config;  // absent: provisioning_parameters.json
  // {ScheduleExpression, DeploymentConfig?}, read by spec::read_scheduled_update.
  std::optional<json> scheduled_update_config;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kInstanceType, s.instance_type);
    v(field::kInstanceCount, s.instance_count);
    v(field::kLifeCycleConfig, s.life_cycle_config);
    v(field::kThreadsPerCore, s.threads_per_core);
    v(field::kExecutionRole, s.execution_role);
    v(field::kInstanceStorageConfigs, s.instance_storage_configs);
    v(field::kSlurmConfig, s.slurm_config);
    v(field::kScheduledUpdateConfig, s.scheduled_update_config);
    v(field::kHostPool, s.host_pool);
    v(field::kWarmSpares, s.warm_spares);
  }
  json to_json() const;
  static Result<InstanceGroupSpec> from_json(const json& in);
};

struct CreateClusterRequest {
  static constexpr const char* kName = "CreateClusterRequest";
  std::string cluster_name;
  std::vector<InstanceGroupSpec> instance_groups;
  std::optional<std::string> node_recovery;  // Automatic (the default) or None
  std::optional<TieredStorageConfig> tiered_storage_config;  // absent: the tier is off
  std::optional<ClusterOrchestrator> orchestrator;           // Slurm's; absent: Managed
  std::optional<std::string> node_provisioning_mode;         // Continuous, or absent
  std::optional<json> tags;                  // accepted so a cloud request parses; ignored
  std::optional<json> vpc_config;            // likewise
  std::optional<json> shared_file_system;    // endure's: /fsx on hosts (spec/shared_fs.h)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kInstanceGroups, s.instance_groups);
    v(field::kNodeRecovery, s.node_recovery);
    v(field::kTieredStorageConfig, s.tiered_storage_config);
    v(field::kOrchestrator, s.orchestrator);
    v(field::kNodeProvisioningMode, s.node_provisioning_mode);
    v(field::kTags, s.tags);
    v(field::kVpcConfig, s.vpc_config);
    v(field::kSharedFileSystem, s.shared_file_system);
  }
  json to_json() const;
  static Result<CreateClusterRequest> from_json(const json& in);
};

// CreateCluster's, UpdateCluster's and DeleteCluster's reply.
struct ClusterArnReply {
  static constexpr const char* kName = "ClusterArnReply";
  std::string cluster_arn;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterArn, s.cluster_arn);
  }
  json to_json() const;
  static Result<ClusterArnReply> from_json(const json& in);
};
using CreateClusterReply = ClusterArnReply;
using UpdateClusterReply = ClusterArnReply;
using DeleteClusterReply = ClusterArnReply;

// A request naming one cluster: DescribeCluster's and DeleteCluster's.
struct ClusterRef {
  static constexpr const char* kName = "ClusterRef";
  std::string cluster_name;  // a name or an ARN; not empty
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
  }
  Status check() const;
  json to_json() const;
  static Result<ClusterRef> from_json(const json& in);
};
using DescribeClusterRequest = ClusterRef;
using DeleteClusterRequest = ClusterRef;

// An instance group as DescribeCluster shows it.
struct InstanceGroupDetails {
  static constexpr const char* kName = "InstanceGroupDetails";
  std::string instance_group_name;
  std::string instance_type;
  int current_count = 0;  // instances Running
  int target_count = 0;   // the spec's InstanceCount
  LifeCycleConfig life_cycle_config;
  int threads_per_core = 1;
  std::string role;                           // Controller, Login or Worker
  std::optional<std::string> partition_name;  // workers' Slurm partition
  std::optional<std::string> host_pool;       // absent: local nodes
  std::optional<int> warm_spares;             // absent: none kept
  std::optional<int> current_warm_spares;     // spares ready (status WarmSpare) now
  std::optional<ClusterSlurmConfig> slurm_config;  // as CreateCluster gave it
  // {"Scaling": 1} while the group has fewer nodes Running than TargetCount; absent else.
  std::optional<json> active_operations;
  std::optional<json> scheduled_update_config;  // as last given
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kInstanceType, s.instance_type);
    v(field::kCurrentCount, s.current_count);
    v(field::kTargetCount, s.target_count);
    v(field::kLifeCycleConfig, s.life_cycle_config);
    v(field::kThreadsPerCore, s.threads_per_core);
    v(field::kRole, s.role);
    v(field::kPartitionName, s.partition_name);
    v(field::kHostPool, s.host_pool);
    v(field::kWarmSpares, s.warm_spares);
    v(field::kCurrentWarmSpares, s.current_warm_spares);
    v(field::kSlurmConfig, s.slurm_config);
    v(field::kActiveOperations, s.active_operations);
    v(field::kScheduledUpdateConfig, s.scheduled_update_config);
  }
  json to_json() const;
  static Result<InstanceGroupDetails> from_json(const json& in);
};

struct DescribeClusterReply {
  static constexpr const char* kName = "DescribeClusterReply";
  std::string cluster_arn;
  std::string cluster_id;
  std::string cluster_name;
  std::string cluster_status;  // Creating, InService, Updating, Deleting, Failed
  std::string creation_time;   // ISO-8601 UTC
  std::optional<std::string> failure_message;
  std::vector<InstanceGroupDetails> instance_groups;
  std::string node_recovery;
  std::optional<TieredStorageConfig> tiered_storage_config;  // absent: never set
  std::optional<ClusterOrchestrator> orchestrator;           // as given; absent: never given
  std::optional<std::string> node_provisioning_mode;         // Continuous, or absent
  std::string slurm_controller_node;
  int slurmctld_port = 0;
  std::string shared_folder;  // the cluster's /fsx on this host
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterArn, s.cluster_arn);
    v(field::kClusterId, s.cluster_id);
    v(field::kClusterName, s.cluster_name);
    v(field::kClusterStatus, s.cluster_status);
    v(field::kCreationTime, s.creation_time);
    v(field::kFailureMessage, s.failure_message);
    v(field::kInstanceGroups, s.instance_groups);
    v(field::kNodeRecovery, s.node_recovery);
    v(field::kTieredStorageConfig, s.tiered_storage_config);
    v(field::kOrchestrator, s.orchestrator);
    v(field::kNodeProvisioningMode, s.node_provisioning_mode);
    v(field::kSlurmControllerNode, s.slurm_controller_node);
    v(field::kSlurmctldPort, s.slurmctld_port);
    v(field::kSharedFolder, s.shared_folder);
  }
  json to_json() const;
  static Result<DescribeClusterReply> from_json(const json& in);
};

using ListClustersRequest = Empty;

struct ClusterSummary {
  static constexpr const char* kName = "ClusterSummary";
  std::string cluster_arn;
  std::string cluster_id;
  std::string cluster_name;
  std::string cluster_status;
  std::string creation_time;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterArn, s.cluster_arn);
    v(field::kClusterId, s.cluster_id);
    v(field::kClusterName, s.cluster_name);
    v(field::kClusterStatus, s.cluster_status);
    v(field::kCreationTime, s.creation_time);
  }
  json to_json() const;
  static Result<ClusterSummary> from_json(const json& in);
};

struct ListClustersReply {
  static constexpr const char* kName = "ListClustersReply";
  std::vector<ClusterSummary> cluster_summaries;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterSummaries, s.cluster_summaries);
  }
  json to_json() const;
  static Result<ListClustersReply> from_json(const json& in);
};

// Every group of the cluster, as in the spec; only InstanceCount (and NodeRecovery and
// TieredStorageConfig) may differ from the current spec (spec::validate_cluster_update's
// rules).
struct UpdateClusterRequest {
  static constexpr const char* kName = "UpdateClusterRequest";
  std::string cluster_name;
  std::vector<InstanceGroupSpec> instance_groups;
  std::optional<std::string> node_recovery;
  std::optional<TieredStorageConfig> tiered_storage_config;  // replaces the cluster's
  std::optional<ClusterOrchestrator> orchestrator;           // replaces the cluster's
  std::optional<std::string> node_provisioning_mode;         // Continuous from now on
  std::optional<json> shared_file_system;  // as the cluster has it: echoed, never changed
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kInstanceGroups, s.instance_groups);
    v(field::kNodeRecovery, s.node_recovery);
    v(field::kTieredStorageConfig, s.tiered_storage_config);
    v(field::kOrchestrator, s.orchestrator);
    v(field::kNodeProvisioningMode, s.node_provisioning_mode);
    v(field::kSharedFileSystem, s.shared_file_system);
  }
  json to_json() const;
  static Result<UpdateClusterRequest> from_json(const json& in);
};

// UpdateClusterSoftware: the named groups (default every group) get fresh software, in
// rolling batches. DeploymentConfig is {RollingUpdatePolicy: {MaximumBatchSize: {Type:
// INSTANCE_COUNT|CAPACITY_PERCENTAGE, Value}}, WaitIntervalInSeconds}, checked by endured
// (controller/software_update_plan.h); ImageId is refused (nodes run the host's software).
struct UpdateClusterSoftwareRequest {
  static constexpr const char* kName = "UpdateClusterSoftwareRequest";
  std::string cluster_name;
  std::optional<std::vector<std::string>> instance_groups;
  std::optional<json> deployment_config;
  std::optional<std::string> image_id;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kInstanceGroups, s.instance_groups);
    v(field::kDeploymentConfig, s.deployment_config);
    v(field::kImageId, s.image_id);
  }
  json to_json() const;
  static Result<UpdateClusterSoftwareRequest> from_json(const json& in);
};
using UpdateClusterSoftwareReply = ClusterArnReply;

}  // namespace endure::api
