#include "controller/front/api_router.h"

#include "api/messages.h"
#include "api/wire.h"
#include "common/ids.h"
#include "controller/core/lookup.h"
#include "controller/core/node_state.h"
#include "controller/nodes/node_addition.h"
#include "controller/nodes/node_deletion.h"

namespace endure::controller {

Result<json> ApiRouter::handle(const std::string& action, const json& request) {
  if (!request.is_object()) return invalid("request: must be a JSON object");
  ClusterService& c = p_.clusters;
  if (action == api::kCreateCluster) return c.create_cluster(request);
  if (action == api::kDescribeCluster) return c.describe_cluster(request);
  if (action == api::kListClusters) return c.list_clusters(request);
  if (action == api::kListClusterNodes) return c.list_cluster_nodes(request);
  if (action == api::kDescribeClusterNode) return c.describe_cluster_node(request);
  if (action == api::kUpdateCluster) return c.update_cluster(request);
  if (action == api::kDeleteCluster) return c.delete_cluster(request);
  if (action == api::kListClusterEvents) return c.list_cluster_events(request);
  if (action == api::kDescribeClusterEvent) return c.describe_cluster_event(request);
  if (action == api::kGetClusterNodeLog) return c.get_cluster_node_log(request);
  if (action == api::kGetNodeExecTarget) return c.get_node_exec_target(request);
  if (action == api::kBatchRebootClusterNodes) {
    return c.batch_recover(request, RecoveryAction::kReboot);
  }
  if (action == api::kBatchReplaceClusterNodes) {
    return c.batch_recover(request, RecoveryAction::kReplace);
  }
  if (action == api::kStartClusterHealthCheck) {
    auto started = p_.deep_checks.start(request);
    if (started) p_.wake_reconciler();
    return started;
  }
  if (action == api::kBatchDeleteClusterNodes) {
    auto deleted = batch_delete_nodes(p_.store, request);
    if (deleted) p_.wake_reconciler();
    return deleted;
  }
  if (action == api::kBatchAddClusterNodes) {
    auto added = batch_add_nodes(p_.store, request);
    if (added) p_.wake_reconciler();
    return added;
  }
  if (action == api::kUpdateClusterSoftware) {
    auto started = p_.software_updates.start(request);
    if (started) p_.wake_reconciler();
    return started;
  }
  if (action == api::kRegisterHostPools) return p_.hosts.register_pools(request);
  if (action == api::kListHosts) return p_.hosts.list_hosts(request);
  if (action == api::kReturnHost) return p_.hosts.return_host(request);
  if (action == api::kDebugInjectFault) return p_.faults.inject(request);
  if (action == api::kListTrainingRuns) return p_.training.list_runs(request);
  if (action == api::kGetTrainingMetrics) return p_.training.get_metrics(request);
  if (action == api::kListClusterJobs) return p_.training.list_jobs(request);
  if (action == api::kDebugDescribeController) {
    return api::DebugDescribeControllerReply{p_.reconcile_passes()}.to_json();
  }
  if (p_.access_keys &&
      (action == kCreateAccessKey || action == kListAccessKeys || action == kDeleteAccessKey)) {
    return p_.access_keys->handle(action, request);
  }
  return make_error("UnknownOperation", "no action named " + action);
}

Result<json> ApiRouter::handle_agent(const std::string& action, const std::string& instance_id,
                                     const std::string& token, const json& request) {
  return p_.agents.handle(action, instance_id, token, request);
}

Result<json> ApiRouter::handle_auto_resume(const std::string& action, const std::string& token,
                                           bool operator_ok, const json& request) {
  if (!request.is_object()) return invalid("request: must be a JSON object");
  auto cluster = find_cluster(p_.store, request);
  // One answer for "no such cluster" and "wrong token" to a caller without the operator's.
  if (!operator_ok) {
    auto expected = cluster ? p_.store.auto_resume_token(cluster->id) : Result<std::string>("");
    if (!cluster || !expected || expected->empty() || !ids::same_secret(token, *expected)) {
      return make_error(api::kUnauthorized, "not a valid auto-resume token for this cluster");
    }
  }
  if (!cluster) return cluster.error();
  if (action == api::kAutoResumeStepFailed) {
    auto reply = p_.auto_resume.step_failed(*cluster, request);
    if (reply && reply->value("Resume", false)) p_.wake_reconciler();
    return reply;
  }
  if (action == api::kAutoResumeStatus) return p_.auto_resume.status(*cluster, request);
  if (action == api::kReportTrainingMetrics) return p_.training.report(*cluster, request);
  return make_error("UnknownOperation", "no auto-resume action named " + action);
}

}  // namespace endure::controller
