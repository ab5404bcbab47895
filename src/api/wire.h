// The wire format between endure (CLI), endured and endure-agent, in one place.
//
// Every call is `POST /v1/<Action>` with a JSON object body and a JSON object reply,
// authenticated with `Authorization: Bearer <token>`. Field names follow the cloud
// service's cluster API (ClusterName, InstanceGroups, InstanceId, ...). An error reply
// has a non-2xx status and the body {"__type": <code>, "message": <text>}.
//
// The messages themselves (one struct per request and per reply, with their field names)
// are in messages.h; this file holds the action names and the constants both sides use.
#pragma once

#include <array>

#include "common/error_codes.h"

namespace endure::api {

// endured's default port on 127.0.0.1; `endured --port` or config.json "Port" changes it.
inline constexpr int kDefaultPort = 7117;

inline constexpr const char* kPathPrefix = "/v1/";

// Operator actions (the CLI's verbs, in the cloud API's spelling).
inline constexpr const char* kCreateCluster = "CreateCluster";
inline constexpr const char* kDescribeCluster = "DescribeCluster";
inline constexpr const char* kListClusters = "ListClusters";
inline constexpr const char* kListClusterNodes = "ListClusterNodes";
inline constexpr const char* kDescribeClusterNode = "DescribeClusterNode";
inline constexpr const char* kUpdateCluster = "UpdateCluster";
inline constexpr const char* kUpdateClusterSoftware = "UpdateClusterSoftware";
inline constexpr const char* kBatchDeleteClusterNodes = "BatchDeleteClusterNodes";
inline constexpr const char* kDescribeClusterEvent = "DescribeClusterEvent";
inline constexpr const char* kDeleteCluster = "DeleteCluster";
inline constexpr const char* kListClusterEvents = "ListClusterEvents";
inline constexpr const char* kGetClusterNodeLog = "GetClusterNodeLog";
inline constexpr const char* kBatchRebootClusterNodes = "BatchRebootClusterNodes";
inline constexpr const char* kBatchReplaceClusterNodes = "BatchReplaceClusterNodes";
// At most this many NodeIds in one BatchReboot/BatchReplaceClusterNodes call.
inline constexpr int kMaxBatchNodes = 25;
// BatchDeleteClusterNodes takes at most this many (the cloud service's limit).
inline constexpr int kMaxBatchDeleteNodes = 99;
inline constexpr const char* kBatchAddClusterNodes = "BatchAddClusterNodes";
// BatchAddClusterNodes' bounds, the cloud service's: NodesToAdd entries, nodes in all (and
// in one entry), a ClientToken's length and how long it is remembered.
inline constexpr int kMaxAddSpecifications = 5;
inline constexpr int kMaxNodesToAdd = 50;
inline constexpr int kMaxClientTokenLength = 64;
inline constexpr double kClientTokenSeconds = 8 * 3600;
inline constexpr const char* kStartClusterHealthCheck = "StartClusterHealthCheck";
// At most this many NodeIds in one StartClusterHealthCheck call.
inline constexpr int kMaxHealthCheckNodes = 64;
inline constexpr const char* kAgentReportDeepHealthCheck = "AgentReportDeepHealthCheck";
// Port of the deep check's network test server, on each node's own address.
inline constexpr int kDeepCheckNetworkPort = 15000;
// Makes a real fault on a node (tests, drills).
inline constexpr const char* kDebugInjectFault = "DebugInjectFault";
// DebugInjectFault's Kind: every fault endured can make.
inline constexpr std::array kFaultKinds = {"crash",     "hang",        "xid",     "ecc",
                                           "disk-full", "slurmd-kill", "fsx-hang"};
// Reconcile passes completed since endured started, so that a test or a drill can wait
// until a change has been looked at instead of sleeping.
inline constexpr const char* kDebugDescribeController = "DebugDescribeController";
// Where to run a command inside a node. The local provider's nodes are namespaces on this
// host, so the CLI enters them itself.
inline constexpr const char* kGetNodeExecTarget = "GetNodeExecTarget";

// Host pools: the machines a user owns, registered by the pool file's content
// (provider/host/host_pool.h), listed with their state, and a repaired one returned.
inline constexpr const char* kRegisterHostPools = "RegisterHostPools";
inline constexpr const char* kListHosts = "ListHosts";
inline constexpr const char* kReturnHost = "ReturnHost";

// Agent actions, authenticated with the node's own join token (not the operator token),
// and the header that names the instance the token belongs to.
inline constexpr const char* kAgentReportLifecycle = "AgentReportLifecycle";
inline constexpr const char* kAgentHeartbeat = "AgentHeartbeat";
inline constexpr const char* kAgentReportFindings = "AgentReportFindings";
// AgentReportLifecycle's Status.
inline constexpr std::array kLifecycleStatuses = {"InProgress", "Succeeded", "Failed"};
inline constexpr const char* kInstanceIdHeader = "X-Endure-Instance-Id";

// srun's auto-resume supervisor (src/autoresume/), authenticated with the cluster's
// auto-resume token (from the node's /opt/endure/config/auto_resume.json) or the operator's.
inline constexpr const char* kAutoResumeStepFailed = "AutoResumeStepFailed";
inline constexpr const char* kAutoResumeStatus = "AutoResumeStatus";
// endure-train's rank 0 reports its log lines with the same credential.
inline constexpr const char* kReportTrainingMetrics = "ReportTrainingMetrics";
inline constexpr int kMaxTrainingRecords = 1000;  // a call's Records at most

// The operator reads training runs and the jobs endure auto-resumed.
inline constexpr const char* kListTrainingRuns = "ListTrainingRuns";
inline constexpr const char* kGetTrainingMetrics = "GetTrainingMetrics";
inline constexpr const char* kListClusterJobs = "ListClusterJobs";

// Error codes (the reply's "__type"): common/error_codes.h's.
using errors::kConflictException;
using errors::kInternalFailure;
using errors::kResourceInUse;
using errors::kResourceNotFound;
using errors::kUnauthorized;
using errors::kValidationException;

}  // namespace endure::api
