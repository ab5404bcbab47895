#include "api/messages.h"

#include <algorithm>

namespace endure::api {
namespace {

Status non_empty(const char* field, const std::string& value) {
  if (value.empty()) return invalid(std::string(field) + ": must be a non-empty string");
  return {};
}

// The job a job's call names: ClusterName and a positive JobId.
Status cluster_and_job(const std::string& cluster_name, long long job_id) {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (job_id <= 0) return invalid(std::string(field::kJobId) + ": must be a positive integer");
  return {};
}

template <class Request, class Reply>
ActionFields action(const char* name) {
  return {name, codec::field_list<Request>(), codec::field_list<Reply>()};
}

template <class T>
TypeFields type() {
  return {T::kName, codec::field_list<T>()};
}

}  // namespace

std::string join_words(std::span<const char* const> words, std::string_view separator) {
  std::string out;
  for (const char* w : words) {
    if (!out.empty()) out += separator;
    out += w;
  }
  return out;
}

// Every message's two codec functions are the same two lines over its own field list.
#define ENDURE_API_CODEC(T)                               \
  json T::to_json() const { return codec::write(*this); } \
  Result<T> T::from_json(const json& in) { return codec::read<T>(in); }

ENDURE_API_CODEC(Empty)
ENDURE_API_CODEC(LifeCycleConfig)
ENDURE_API_CODEC(TieredStorageConfig)
ENDURE_API_CODEC(ClusterSlurmConfig)
ENDURE_API_CODEC(OrchestratorSlurmConfig)
ENDURE_API_CODEC(ClusterOrchestrator)
ENDURE_API_CODEC(AddClusterNodeSpecification)
ENDURE_API_CODEC(BatchAddClusterNodesRequest)
ENDURE_API_CODEC(NodeAdditionResult)
ENDURE_API_CODEC(BatchAddClusterNodesError)
ENDURE_API_CODEC(BatchAddClusterNodesReply)
ENDURE_API_CODEC(InstanceGroupSpec)
ENDURE_API_CODEC(CreateClusterRequest)
ENDURE_API_CODEC(ClusterArnReply)
ENDURE_API_CODEC(ClusterRef)
ENDURE_API_CODEC(InstanceGroupDetails)
ENDURE_API_CODEC(DescribeClusterReply)
ENDURE_API_CODEC(ClusterSummary)
ENDURE_API_CODEC(ListClustersReply)
ENDURE_API_CODEC(UpdateClusterRequest)
ENDURE_API_CODEC(UpdateClusterSoftwareRequest)
ENDURE_API_CODEC(InstanceStatus)
ENDURE_API_CODEC(ClusterNodeSummary)
ENDURE_API_CODEC(ListClusterNodesRequest)
ENDURE_API_CODEC(ListClusterNodesReply)
ENDURE_API_CODEC(NodeRef)
ENDURE_API_CODEC(NodeLifeCycle)
ENDURE_API_CODEC(NodeRecoveryInfo)
ENDURE_API_CODEC(NodeDetails)
ENDURE_API_CODEC(DescribeClusterNodeReply)
ENDURE_API_CODEC(ListClusterEventsRequest)
ENDURE_API_CODEC(Event)
ENDURE_API_CODEC(ListClusterEventsReply)
ENDURE_API_CODEC(DescribeClusterEventRequest)
ENDURE_API_CODEC(DescribeClusterEventReply)
ENDURE_API_CODEC(GetClusterNodeLogReply)
ENDURE_API_CODEC(GetNodeExecTargetReply)
ENDURE_API_CODEC(BatchNodesRequest)
ENDURE_API_CODEC(BatchDeleteClusterNodesRequest)
ENDURE_API_CODEC(BatchFailure)
ENDURE_API_CODEC(BatchNodesReply)
ENDURE_API_CODEC(StartClusterHealthCheckRequest)
ENDURE_API_CODEC(StartClusterHealthCheckReply)
ENDURE_API_CODEC(DebugInjectFaultRequest)
ENDURE_API_CODEC(DebugInjectFaultReply)
ENDURE_API_CODEC(DebugDescribeControllerReply)
ENDURE_API_CODEC(AgentReportLifecycleRequest)
ENDURE_API_CODEC(Finding)
ENDURE_API_CODEC(AgentHeartbeatRequest)
ENDURE_API_CODEC(LoggedFinding)
ENDURE_API_CODEC(AgentReportFindingsRequest)
ENDURE_API_CODEC(DeepCheckOrder)
ENDURE_API_CODEC(AgentHeartbeatReply)
ENDURE_API_CODEC(DeepCheckResult)
ENDURE_API_CODEC(AgentReportDeepHealthCheckRequest)
ENDURE_API_CODEC(AutoResumeStepFailedRequest)
ENDURE_API_CODEC(AutoResumeStepFailedReply)
ENDURE_API_CODEC(AutoResumeStatusRequest)
ENDURE_API_CODEC(AutoResumeStatusReply)
ENDURE_API_CODEC(HostSummary)
ENDURE_API_CODEC(RegisterHostPoolsRequest)
ENDURE_API_CODEC(ListHostsRequest)
ENDURE_API_CODEC(ListHostsReply)
ENDURE_API_CODEC(ReturnHostRequest)
ENDURE_API_CODEC(ReturnHostReply)
ENDURE_API_CODEC(ErrorReply)
ENDURE_API_CODEC(AccessKeyMetadata)
ENDURE_API_CODEC(NewAccessKey)
ENDURE_API_CODEC(CreateAccessKeyReply)
ENDURE_API_CODEC(ListAccessKeysReply)
ENDURE_API_CODEC(DeleteAccessKeyRequest)

ENDURE_API_CODEC(ReportTrainingMetricsRequest)
ENDURE_API_CODEC(ReportTrainingMetricsReply)
ENDURE_API_CODEC(TrainingRunSummary)
ENDURE_API_CODEC(ListTrainingRunsReply)
ENDURE_API_CODEC(GetTrainingMetricsRequest)
ENDURE_API_CODEC(TrainingPoint)
ENDURE_API_CODEC(TrainingEval)
ENDURE_API_CODEC(TrainingCheckpoint)
ENDURE_API_CODEC(TrainingStart)
ENDURE_API_CODEC(GetTrainingMetricsReply)
ENDURE_API_CODEC(ClusterJob)
ENDURE_API_CODEC(ListClusterJobsReply)

#undef ENDURE_API_CODEC

// The rules beyond the fields' types, worded as endured words them today.

Status TieredStorageConfig::check() const {
  const auto& percent = instance_memory_allocation_percentage;
  if (percent && (*percent < 0 || *percent > 100)) {
    return invalid(std::string(field::kInstanceMemoryAllocationPercentage) +
                   ": must be an integer from 0 to 100");
  }
  return {};
}

Status ClusterRef::check() const { return non_empty(field::kClusterName, cluster_name); }

Status NodeRef::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  return non_empty(field::kNodeId, node_id);
}

Status ReturnHostRequest::check() const { return non_empty(field::kHostName, host_name); }
Status DeleteAccessKeyRequest::check() const {
  return non_empty(key_field::kAccessKeyId, access_key_id);
}

Status ListClusterNodesRequest::check() const {
  return non_empty(field::kClusterName, cluster_name);
}

Status ListClusterEventsRequest::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (max_results && (*max_results < 1 || *max_results > 10000)) {
    return invalid(std::string(field::kMaxResults) + ": must be an integer from 1 to 10000");
  }
  return {};
}

Status BatchNodesRequest::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (node_ids.empty() || node_ids.size() > static_cast<size_t>(kMaxBatchNodes)) {
    return invalid(std::string(field::kNodeIds) + ": must be an array of 1 to " +
                   std::to_string(kMaxBatchNodes) + " instance ids");
  }
  return {};
}

Status BatchDeleteClusterNodesRequest::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (node_ids.empty() || node_ids.size() > static_cast<size_t>(kMaxBatchDeleteNodes)) {
    return invalid(std::string(field::kNodeIds) + ": must be an array of 1 to " +
                   std::to_string(kMaxBatchDeleteNodes) + " instance ids");
  }
  return {};
}

Status StartClusterHealthCheckRequest::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (node_ids && (node_ids->empty() || node_ids->size() > size_t{kMaxHealthCheckNodes})) {
    return invalid(std::string(field::kNodeIds) + ": must be an array of 1 to " +
                   std::to_string(kMaxHealthCheckNodes) + " node names or instance ids");
  }
  return {};
}

Status DebugInjectFaultRequest::check() const {
  if (Status s = non_empty(field::kClusterName, cluster_name); !s) return s;
  if (Status s = non_empty(field::kNodeId, node_id); !s) return s;
  if (std::find(kFaultKinds.begin(), kFaultKinds.end(), kind) == kFaultKinds.end()) {
    return invalid(std::string(field::kKind) + ": must be one of " + join_words(kFaultKinds, ", "));
  }
  return {};
}

Status AgentReportLifecycleRequest::check() const {
  auto& all = kLifecycleStatuses;
  if (std::find(all.begin(), all.end(), status) == all.end()) {
    return invalid(std::string(field::kStatus) + ": must be one of " + join_words(all, ", "));
  }
  return {};
}

Status AutoResumeStepFailedRequest::check() const {
  if (Status s = cluster_and_job(cluster_name, job_id); !s) return s;
  // Nodes wins when it lists any; NodeList is the fallback (endured expands it).
  if ((!nodes || nodes->empty()) && !node_list) {
    return invalid(std::string(field::kNodes) +
                   ": must be a non-empty array of node names (or NodeList a hostlist)");
  }
  return {};
}

Status AutoResumeStatusRequest::check() const { return cluster_and_job(cluster_name, job_id); }

Status ReportTrainingMetricsRequest::check() const {
  if (Status s = cluster_and_job(cluster_name, job_id); !s) return s;
  if (!records.is_array() || records.empty() || records.size() > kMaxTrainingRecords) {
    return invalid(std::string(field::kRecords) + ": must be an array of 1 to " +
                   std::to_string(kMaxTrainingRecords) + " objects");
  }
  for (const auto& r : records) {
    if (!r.is_object() || !r.contains("time") || !r["time"].is_number()) {
      return invalid(std::string(field::kRecords) +
                     ": each must be an object with a numeric \"time\"");
    }
  }
  return {};
}

Status GetTrainingMetricsRequest::check() const {
  if (Status s = cluster_and_job(cluster_name, job_id); !s) return s;
  if (max_points && (*max_points < 2 || *max_points > 10000)) {
    return invalid(std::string(field::kMaxPoints) + ": must be an integer from 2 to 10000");
  }
  return {};
}

std::vector<ActionFields> all_actions() {
  return {
      action<CreateClusterRequest, CreateClusterReply>(kCreateCluster),
      action<DescribeClusterRequest, DescribeClusterReply>(kDescribeCluster),
      action<ListClustersRequest, ListClustersReply>(kListClusters),
      action<ListClusterNodesRequest, ListClusterNodesReply>(kListClusterNodes),
      action<DescribeClusterNodeRequest, DescribeClusterNodeReply>(kDescribeClusterNode),
      action<UpdateClusterRequest, UpdateClusterReply>(kUpdateCluster),
      action<UpdateClusterSoftwareRequest, UpdateClusterSoftwareReply>(kUpdateClusterSoftware),
      action<DeleteClusterRequest, DeleteClusterReply>(kDeleteCluster),
      action<ListClusterEventsRequest, ListClusterEventsReply>(kListClusterEvents),
      action<DescribeClusterEventRequest, DescribeClusterEventReply>(kDescribeClusterEvent),
      action<GetClusterNodeLogRequest, GetClusterNodeLogReply>(kGetClusterNodeLog),
      action<GetNodeExecTargetRequest, GetNodeExecTargetReply>(kGetNodeExecTarget),
      action<BatchRebootClusterNodesRequest, BatchRebootClusterNodesReply>(
          kBatchRebootClusterNodes),
      action<BatchReplaceClusterNodesRequest, BatchReplaceClusterNodesReply>(
          kBatchReplaceClusterNodes),
      action<BatchDeleteClusterNodesRequest, BatchDeleteClusterNodesReply>(
          kBatchDeleteClusterNodes),
      action<StartClusterHealthCheckRequest, StartClusterHealthCheckReply>(
          kStartClusterHealthCheck),
      action<DebugInjectFaultRequest, DebugInjectFaultReply>(kDebugInjectFault),
      action<DebugDescribeControllerRequest, DebugDescribeControllerReply>(
          kDebugDescribeController),
      action<RegisterHostPoolsRequest, RegisterHostPoolsReply>(kRegisterHostPools),
      action<ListHostsRequest, ListHostsReply>(kListHosts),
      action<ReturnHostRequest, ReturnHostReply>(kReturnHost),
      action<AgentReportLifecycleRequest, AgentReportLifecycleReply>(kAgentReportLifecycle),
      action<AgentHeartbeatRequest, AgentHeartbeatReply>(kAgentHeartbeat),
      action<AgentReportFindingsRequest, AgentReportFindingsReply>(kAgentReportFindings),
      action<AgentReportDeepHealthCheckRequest, AgentReportDeepHealthCheckReply>(
          kAgentReportDeepHealthCheck),
      action<AutoResumeStepFailedRequest, AutoResumeStepFailedReply>(kAutoResumeStepFailed),
      action<AutoResumeStatusRequest, AutoResumeStatusReply>(kAutoResumeStatus),
      action<ReportTrainingMetricsRequest, ReportTrainingMetricsReply>(kReportTrainingMetrics),
      action<ListTrainingRunsRequest, ListTrainingRunsReply>(kListTrainingRuns),
      action<GetTrainingMetricsRequest, GetTrainingMetricsReply>(kGetTrainingMetrics),
      action<ListClusterJobsRequest, ListClusterJobsReply>(kListClusterJobs),
      action<BatchAddClusterNodesRequest, BatchAddClusterNodesReply>(kBatchAddClusterNodes),
  };
}

std::vector<TypeFields> all_types() {
  return {type<LifeCycleConfig>(), type<InstanceGroupSpec>(),  type<InstanceGroupDetails>(),
          type<ClusterSummary>(),  type<InstanceStatus>(),     type<ClusterNodeSummary>(),
          type<NodeDetails>(),     type<NodeLifeCycle>(),      type<NodeRecoveryInfo>(),
          type<Event>(),           type<BatchFailure>(),       type<Finding>(),
          type<LoggedFinding>(),   type<DeepCheckOrder>(),     type<DeepCheckResult>(),
          type<HostSummary>(),     type<TrainingRunSummary>(), type<TrainingPoint>(),
          type<TrainingEval>(),    type<TrainingCheckpoint>(), type<TrainingStart>(),
          type<ClusterJob>(),      type<ErrorReply>(),         type<TieredStorageConfig>(),
          type<ClusterSlurmConfig>(), type<OrchestratorSlurmConfig>(), type<ClusterOrchestrator>(),
          type<AddClusterNodeSpecification>(), type<NodeAdditionResult>(),
          type<BatchAddClusterNodesError>()};
}

}  // namespace endure::api
