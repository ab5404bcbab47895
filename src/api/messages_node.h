// Messages of the node actions: ListClusterNodes, DescribeClusterNode, ListClusterEvents,
// GetClusterNodeLog, GetNodeExecTarget, the batch reboot and replace, deep health checks
// and the debug actions. Include messages.h, not this file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/messages_cluster.h"

namespace endure::api {

struct InstanceStatus {
  static constexpr const char* kName = "InstanceStatus";
  std::string status;  // Pending, Running, Failure, ShuttingDown, SystemUpdating, ...
  std::string message;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStatus, s.status);
    v(field::kMessage, s.message);
  }
  json to_json() const;
  static Result<InstanceStatus> from_json(const json& in);
};

struct ClusterNodeSummary {
  static constexpr const char* kName = "ClusterNodeSummary";
  std::string instance_group_name;
  std::string instance_id;
  std::optional<std::string> node_logical_id;  // absent: a node from before the ids
  std::string node_name;
  std::string instance_type;
  InstanceStatus instance_status;
  std::string launch_time;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kInstanceId, s.instance_id);
    v(field::kNodeLogicalId, s.node_logical_id);
    v(field::kNodeName, s.node_name);
    v(field::kInstanceType, s.instance_type);
    v(field::kInstanceStatus, s.instance_status);
    v(field::kLaunchTime, s.launch_time);
  }
  json to_json() const;
  static Result<ClusterNodeSummary> from_json(const json& in);
};

struct ListClusterNodesRequest {
  static constexpr const char* kName = "ListClusterNodesRequest";
  std::string cluster_name;
  std::optional<std::string> instance_group_name_contains;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kInstanceGroupNameContains, s.instance_group_name_contains);
  }
  Status check() const;
  json to_json() const;
  static Result<ListClusterNodesRequest> from_json(const json& in);
};

struct ListClusterNodesReply {
  static constexpr const char* kName = "ListClusterNodesReply";
  std::vector<ClusterNodeSummary> cluster_node_summaries;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterNodeSummaries, s.cluster_node_summaries);
  }
  json to_json() const;
  static Result<ListClusterNodesReply> from_json(const json& in);
};

// A request naming one node: DescribeClusterNode's, GetClusterNodeLog's and
// GetNodeExecTarget's.
struct NodeRef {
  static constexpr const char* kName = "NodeRef";
  std::string cluster_name;
  std::string node_id;  // an InstanceId or a node name such as worker-3
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeId, s.node_id);
  }
  Status check() const;
  json to_json() const;
  static Result<NodeRef> from_json(const json& in);
};
using DescribeClusterNodeRequest = NodeRef;
using GetClusterNodeLogRequest = NodeRef;
using GetNodeExecTargetRequest = NodeRef;

// The node's lifecycle script (OnCreate, or the boot scripts after a reboot).
struct NodeLifeCycle {
  static constexpr const char* kName = "NodeLifeCycle";
  std::string status;            // Pending, InProgress, Succeeded, Failed, Rebooting
  std::optional<int> exit_code;  // once the script has ended
  std::string last_lines;
  std::string log_path;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStatus, s.status);
    v(field::kExitCode, s.exit_code);
    v(field::kLastLines, s.last_lines);
    v(field::kLogPath, s.log_path);
  }
  json to_json() const;
  static Result<NodeLifeCycle> from_json(const json& in);
};

// A reboot or replacement under way.
struct NodeRecoveryInfo {
  static constexpr const char* kName = "NodeRecoveryInfo";
  std::string action;  // Reboot or Replace
  std::string reason;
  std::string stage;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kAction, s.action);
    v(field::kReason, s.reason);
    v(field::kStage, s.stage);
  }
  json to_json() const;
  static Result<NodeRecoveryInfo> from_json(const json& in);
};

// A node summary and then the details: endured writes them in this order.
struct NodeDetails : ClusterNodeSummary {
  static constexpr const char* kName = "NodeDetails";
  std::optional<LifeCycleConfig> life_cycle_config;  // absent when the group is gone
  std::optional<int> threads_per_core;
  NodeLifeCycle life_cycle;
  std::optional<std::string> private_primary_ip;    // absent when the node has no slot
  std::optional<std::string> private_dns_hostname;  //   in the layout, as are the
  std::optional<int> slurmd_port;                   //   next two; SlurmdPort: workers only
  std::optional<std::string> role;
  std::optional<std::string> termination_time;
  std::optional<double> seconds_since_heartbeat;  // absent before the first heartbeat
  std::string health;                             // Unknown, Healthy, Unhealthy
  std::optional<std::string> last_verdict;
  std::optional<NodeRecoveryInfo> recovery;
  std::optional<std::string> replaces;  // the instance this one replaced
  template <class S, class V>
  static void fields(S& s, V&& v) {
    ClusterNodeSummary::fields(s, v);
    v(field::kLifeCycleConfig, s.life_cycle_config);
    v(field::kThreadsPerCore, s.threads_per_core);
    v(field::kLifeCycle, s.life_cycle);
    v(field::kPrivatePrimaryIp, s.private_primary_ip);
    v(field::kPrivateDnsHostname, s.private_dns_hostname);
    v(field::kSlurmdPort, s.slurmd_port);
    v(field::kRole, s.role);
    v(field::kTerminationTime, s.termination_time);
    v(field::kSecondsSinceHeartbeat, s.seconds_since_heartbeat);
    v(field::kHealth, s.health);
    v(field::kLastVerdict, s.last_verdict);
    v(field::kRecovery, s.recovery);
    v(field::kReplaces, s.replaces);
  }
  json to_json() const;
  static Result<NodeDetails> from_json(const json& in);
};

struct DescribeClusterNodeReply {
  static constexpr const char* kName = "DescribeClusterNodeReply";
  NodeDetails node_details;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeDetails, s.node_details);
  }
  json to_json() const;
  static Result<DescribeClusterNodeReply> from_json(const json& in);
};

struct ListClusterEventsRequest {
  static constexpr const char* kName = "ListClusterEventsRequest";
  std::string cluster_name;
  std::optional<std::string> node_name;     // only this node's events
  std::optional<long long> after_event_id;  // only events after this one
  std::optional<int> max_results;           // 1 to 10000; endured's default is 1000
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeName, s.node_name);
    v(field::kAfterEventId, s.after_event_id);
    v(field::kMaxResults, s.max_results);
  }
  Status check() const;
  json to_json() const;
  static Result<ListClusterEventsRequest> from_json(const json& in);
};

struct Event {
  static constexpr const char* kName = "Event";
  long long event_id = 0;
  std::string cluster_name;
  std::string cluster_arn;
  std::string resource_type;  // Cluster, InstanceGroup, Instance or Job
  std::optional<std::string> instance_group_name;
  std::optional<std::string> instance_id;
  std::optional<std::string> node_name;
  std::string event_time;
  std::string event_type;
  std::string description;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kEventId, s.event_id);
    v(field::kClusterName, s.cluster_name);
    v(field::kClusterArn, s.cluster_arn);
    v(field::kResourceType, s.resource_type);
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kInstanceId, s.instance_id);
    v(field::kNodeName, s.node_name);
    v(field::kEventTime, s.event_time);
    v(field::kEventType, s.event_type);
    v(field::kDescription, s.description);
  }
  json to_json() const;
  static Result<Event> from_json(const json& in);
};

struct ListClusterEventsReply {
  static constexpr const char* kName = "ListClusterEventsReply";
  std::vector<Event> events;  // oldest first
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kEvents, s.events);
  }
  json to_json() const;
  static Result<ListClusterEventsReply> from_json(const json& in);
};

// DescribeClusterEvent: one event of the cluster by its EventId.
struct DescribeClusterEventRequest {
  static constexpr const char* kName = "DescribeClusterEventRequest";
  std::string cluster_name;
  long long event_id = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kEventId, s.event_id);
  }
  json to_json() const;
  static Result<DescribeClusterEventRequest> from_json(const json& in);
};

struct DescribeClusterEventReply {
  static constexpr const char* kName = "DescribeClusterEventReply";
  Event event;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kEvent, s.event);
  }
  json to_json() const;
  static Result<DescribeClusterEventReply> from_json(const json& in);
};

struct GetClusterNodeLogReply {
  static constexpr const char* kName = "GetClusterNodeLogReply";
  std::string node_name;
  std::string instance_id;
  std::string log_path;
  std::string log;  // the whole lifecycle-script output
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeName, s.node_name);
    v(field::kInstanceId, s.instance_id);
    v(field::kLogPath, s.log_path);
    v(field::kLog, s.log);
  }
  json to_json() const;
  static Result<GetClusterNodeLogReply> from_json(const json& in);
};

struct GetNodeExecTargetReply {
  static constexpr const char* kName = "GetNodeExecTargetReply";
  std::string node_name;
  std::string instance_id;
  int pid = 0;  // on this host: the node's first process, whose namespaces to enter
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeName, s.node_name);
    v(field::kInstanceId, s.instance_id);
    v(field::kPid, s.pid);
  }
  json to_json() const;
  static Result<GetNodeExecTargetReply> from_json(const json& in);
};

// BatchRebootClusterNodes' and BatchReplaceClusterNodes' request.
struct BatchNodesRequest {
  static constexpr const char* kName = "BatchNodesRequest";
  std::string cluster_name;
  std::vector<std::string> node_ids;  // 1 to kMaxBatchNodes
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeIds, s.node_ids);
  }
  Status check() const;
  json to_json() const;
  static Result<BatchNodesRequest> from_json(const json& in);
};
using BatchRebootClusterNodesRequest = BatchNodesRequest;

// BatchDeleteClusterNodes: 1 to kMaxBatchDeleteNodes; its failures' codes are NodeIdNotFound,
// InvalidNodeStatus (the Slurm controller node) and NodeIdInUse.
struct BatchDeleteClusterNodesRequest {
  static constexpr const char* kName = "BatchDeleteClusterNodesRequest";
  std::string cluster_name;
  std::vector<std::string> node_ids;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeIds, s.node_ids);
  }
  Status check() const;
  json to_json() const;
  static Result<BatchDeleteClusterNodesRequest> from_json(const json& in);
};
using BatchReplaceClusterNodesRequest = BatchNodesRequest;

struct BatchFailure {
  static constexpr const char* kName = "BatchFailure";
  std::string node_id;
  std::string code;  // an error code, as an error reply's __type
  std::string message;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeId, s.node_id);
    v(field::kCode, s.code);
    v(field::kMessage, s.message);
  }
  json to_json() const;
  static Result<BatchFailure> from_json(const json& in);
};

struct BatchNodesReply {
  static constexpr const char* kName = "BatchNodesReply";
  std::vector<std::string> successful;  // the NodeIds taken
  std::vector<BatchFailure> failed;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kSuccessful, s.successful);
    v(field::kFailed, s.failed);
  }
  json to_json() const;
  static Result<BatchNodesReply> from_json(const json& in);
};
using BatchRebootClusterNodesReply = BatchNodesReply;
using BatchReplaceClusterNodesReply = BatchNodesReply;
using BatchDeleteClusterNodesReply = BatchNodesReply;

// One entry of BatchAddClusterNodes' NodesToAdd: IncrementTargetCountBy more nodes in the
// group. endure's nodes have no availability zone and a group one instance type, so
// AvailabilityZones must be absent or empty and InstanceTypes name the group's type.
struct AddClusterNodeSpecification {
  static constexpr const char* kName = "AddClusterNodeSpecification";
  std::string instance_group_name;
  int increment_target_count_by = 0;  // 1 to kMaxNodesToAdd
  std::optional<std::vector<std::string>> availability_zones;
  std::optional<std::vector<std::string>> instance_types;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kIncrementTargetCountBy, s.increment_target_count_by);
    v(field::kAvailabilityZones, s.availability_zones);
    v(field::kInstanceTypes, s.instance_types);
  }
  json to_json() const;
  static Result<AddClusterNodeSpecification> from_json(const json& in);
};

// BatchAddClusterNodes: 1 to kMaxAddSpecifications entries, at most kMaxNodesToAdd nodes
// in all. A ClientToken (1 to 64 printable characters, no spaces) used again within 8
// hours with the same NodesToAdd adds nothing and answers the same NodeLogicalIds.
struct BatchAddClusterNodesRequest {
  static constexpr const char* kName = "BatchAddClusterNodesRequest";
  std::string cluster_name;
  std::optional<std::string> client_token;
  std::vector<AddClusterNodeSpecification> nodes_to_add;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kClientToken, s.client_token);
    v(field::kNodesToAdd, s.nodes_to_add);
  }
  json to_json() const;
  static Result<BatchAddClusterNodesRequest> from_json(const json& in);
};

// A node BatchAddClusterNodes asked for: its id from now on, and its status now (Pending
// until its instance is Running).
struct NodeAdditionResult {
  static constexpr const char* kName = "NodeAdditionResult";
  std::string node_logical_id;
  std::string instance_group_name;
  std::string status;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeLogicalId, s.node_logical_id);
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kStatus, s.status);
  }
  json to_json() const;
  static Result<NodeAdditionResult> from_json(const json& in);
};

// A group BatchAddClusterNodes added nothing to: ErrorCode is InstanceGroupNotFound,
// InvalidInstanceGroupStatus, IncompatibleAvailabilityZones or IncompatibleInstanceTypes.
struct BatchAddClusterNodesError {
  static constexpr const char* kName = "BatchAddClusterNodesError";
  std::string instance_group_name;
  std::string error_code;
  int failed_count = 0;
  std::string message;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceGroupName, s.instance_group_name);
    v(field::kErrorCode, s.error_code);
    v(field::kFailedCount, s.failed_count);
    v(field::kMessage, s.message);
  }
  json to_json() const;
  static Result<BatchAddClusterNodesError> from_json(const json& in);
};

struct BatchAddClusterNodesReply {
  static constexpr const char* kName = "BatchAddClusterNodesReply";
  std::vector<NodeAdditionResult> successful;
  std::vector<BatchAddClusterNodesError> failed;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kSuccessful, s.successful);
    v(field::kFailed, s.failed);
  }
  json to_json() const;
  static Result<BatchAddClusterNodesReply> from_json(const json& in);
};

struct StartClusterHealthCheckRequest {
  static constexpr const char* kName = "StartClusterHealthCheckRequest";
  std::string cluster_name;
  // Node names or instance ids, 1 to kMaxHealthCheckNodes; absent: every worker.
  std::optional<std::vector<std::string>> node_ids;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeIds, s.node_ids);
  }
  Status check() const;
  json to_json() const;
  static Result<StartClusterHealthCheckRequest> from_json(const json& in);
};

struct StartClusterHealthCheckReply {
  static constexpr const char* kName = "StartClusterHealthCheckReply";
  std::string health_check_id;
  std::string reservation;  // the Slurm maintenance reservation holding the nodes
  std::vector<std::string> nodes;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kHealthCheckId, s.health_check_id);
    v(field::kReservation, s.reservation);
    v(field::kNodes, s.nodes);
  }
  json to_json() const;
  static Result<StartClusterHealthCheckReply> from_json(const json& in);
};

struct DebugInjectFaultRequest {
  static constexpr const char* kName = "DebugInjectFaultRequest";
  std::string cluster_name;
  std::string node_id;
  std::string kind;  // one of kFaultKinds
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kNodeId, s.node_id);
    v(field::kKind, s.kind);
  }
  Status check() const;
  json to_json() const;
  static Result<DebugInjectFaultRequest> from_json(const json& in);
};

struct DebugInjectFaultReply {
  static constexpr const char* kName = "DebugInjectFaultReply";
  std::string node_name;
  std::string instance_id;
  std::string kind;
  std::string description;  // what was done to the node
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kNodeName, s.node_name);
    v(field::kInstanceId, s.instance_id);
    v(field::kKind, s.kind);
    v(field::kDescription, s.description);
  }
  json to_json() const;
  static Result<DebugInjectFaultReply> from_json(const json& in);
};

using DebugDescribeControllerRequest = Empty;

struct DebugDescribeControllerReply {
  static constexpr const char* kName = "DebugDescribeControllerReply";
  long long reconcile_passes = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kReconcilePasses, s.reconcile_passes);
  }
  json to_json() const;
  static Result<DebugDescribeControllerReply> from_json(const json& in);
};

}  // namespace endure::api
