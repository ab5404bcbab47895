// ScheduledUpdateConfig, an instance group's field in CreateCluster and UpdateCluster (and
// echoed by DescribeCluster): when the group's nodes get fresh software on their own, and how
// many at a time (DeploymentConfig, the shape UpdateClusterSoftware takes too).
//
//   "ScheduledUpdateConfig": {
//     "ScheduleExpression": "cron(0 3 ? * SUN *)",             required, 1-256 characters
//     "DeploymentConfig": {                                     optional
//       "RollingUpdatePolicy": {                                optional
//         "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25},      required
//         "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1}},   optional
//       "WaitIntervalInSeconds": 300,                           optional, 0-3600
//       "AutoRollbackConfiguration": [{"AlarmName": "gpu-errors"}]}}   optional, 1-10 alarms
//
// The bounds are the cloud service's (API reference: ScheduledUpdateConfig,
// DeploymentConfiguration, RollingDeploymentPolicy, CapacitySizeConfig, AlarmDetails); the
// schedule's forms are in spec/schedule_expression.h. Integers given as floats, strings or
// bools are refused, not converted, as everywhere in the spec.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "spec/schedule_expression.h"

namespace endure::spec {

struct FieldError;  // spec/cluster_spec.h

inline constexpr int kMaxDeploymentWaitSeconds = 3600;   // WaitIntervalInSeconds
inline constexpr std::size_t kMaxRollbackAlarms = 10;    // AutoRollbackConfiguration
inline constexpr std::size_t kMaxAlarmNameLength = 255;  // AlarmName

// CapacitySizeConfig: how many of a group's nodes one batch takes.
struct BatchSizeSpec {
  enum class Type { kInstanceCount, kCapacityPercentage };
  Type type = Type::kInstanceCount;  // Type: INSTANCE_COUNT | CAPACITY_PERCENTAGE
  int value = 1;                     // Value: at least 1; a percentage at most 100

  json to_json() const;
  bool operator==(const BatchSizeSpec&) const = default;
};

// RollingUpdatePolicy (the cloud's RollingDeploymentPolicy).
struct RollingUpdatePolicySpec {
  BatchSizeSpec maximum_batch_size;                          // MaximumBatchSize
  std::optional<BatchSizeSpec> rollback_maximum_batch_size;  // RollbackMaximumBatchSize

  bool operator==(const RollingUpdatePolicySpec&) const = default;
};

// DeploymentConfig (the cloud's DeploymentConfiguration). Absent members stay absent: the
// defaults (one node at a time, no wait) are the updater's to choose, not the spec's.
struct DeploymentConfigSpec {
  std::optional<RollingUpdatePolicySpec> rolling_update_policy;  // RollingUpdatePolicy
  std::optional<int> wait_interval_seconds;                      // WaitIntervalInSeconds
  // AutoRollbackConfiguration[].AlarmName, in order; empty: the field is absent (given, it
  // lists 1 to 10).
  std::vector<std::string> rollback_alarms;

  json to_json() const;  // the request shape
  bool operator==(const DeploymentConfigSpec&) const = default;
};

struct ScheduledUpdateSpec {
  ScheduleExpression schedule;  // ScheduleExpression, parsed; schedule.text() as given
  std::optional<DeploymentConfigSpec> deployment_config;  // DeploymentConfig

  json to_json() const;  // the request shape: what DescribeCluster echoes
  bool operator==(const ScheduledUpdateSpec&) const = default;
};

// Reads group["ScheduledUpdateConfig"] of the instance group at group_path
// ("InstanceGroups[2]"): nullopt, and no error, when absent; nullopt when invalid, with each
// broken rule recorded at its path
// ("InstanceGroups[2].ScheduledUpdateConfig.DeploymentConfig.WaitIntervalInSeconds": "must
// be an integer from 0 to 3600"). Unknown keys are refused at every level.
std::optional<ScheduledUpdateSpec> read_scheduled_update(const json& group,
                                                         const std::string& group_path,
                                                         std::vector<FieldError>& errors);

// Reads a DeploymentConfig value (config is the object itself) whose path is path
// ("DeploymentConfig" in UpdateClusterSoftware's request), with the same rules: nullopt and
// the errors recorded when invalid.
std::optional<DeploymentConfigSpec> read_deployment_config(const json& config,
                                                           const std::string& path,
                                                           std::vector<FieldError>& errors);

}  // namespace endure::spec
