// A request to endured from outside: an operator's, an agent's or srun's auto-resume
// supervisor's (every action of api/wire.h). The first byte picks the action, the rest is
// its JSON body, read as endured reads it: the typed message, then what the services do
// with it before they look at the store. A decoded message must encode and decode again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/messages.h"
#include "controller/core/health_monitor.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/software_update_plan.h"
#include "controller/front/agent_service.h"
#include "controller/health/deep_check_manager.h"
#include "controller/jobs/auto_resume_manager.h"
#include "controller/metrics/node_gauges.h"
#include "provider/host/host_pool.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace {

using endure::json;
namespace api = endure::api;
namespace controller = endure::controller;
namespace spec = endure::spec;

// A cluster of a controller and four workers (one warm spare), as UpdateCluster and
// UpdateClusterSoftware find it in the store.
struct Cluster {
  spec::ClusterSpec spec;
  spec::ClusterLayout layout;
};

const Cluster& cluster() {
  static const Cluster c = [] {
    json request = {{"ClusterName", "fuzz"}, {"InstanceGroups", json::array()}};
    for (auto [name, count] : {std::pair{"controller", 1}, {"worker", 4}}) {
      request["InstanceGroups"].push_back(
          {{"InstanceGroupName", name},
           {"InstanceType", "local.c2"},
           {"InstanceCount", count},
           {"LifeCycleConfig", {{"SourceS3Uri", "/lc"}, {"OnCreate", "on_create.sh"}}}});
    }
    request["InstanceGroups"][1]["WarmSpares"] = 1;
    json params = {{"controller_group", "controller"}, {"worker_groups", json::array()}};
    params["worker_groups"].push_back(
        {{"instance_group_name", "worker"}, {"partition_name", "dev"}});
    auto parsed = spec::parse_cluster_spec(request);
    if (!parsed) std::abort();
    auto roles = spec::parse_provisioning(params, *parsed);
    if (!roles) std::abort();
    return Cluster{*parsed, spec::make_layout(*parsed, *roles, 1)};
  }();
  return c;
}

// The typed message; a decoded one must survive its own encoding.
template <class T>
endure::Result<T> typed(const json& body) {
  auto message = T::from_json(body);
  if (message && !T::from_json(message->to_json())) std::abort();
  return message;
}

void create_cluster(const json& body) {
  (void)typed<api::CreateClusterRequest>(body);
  (void)spec::parse_cluster_spec(body);
}

void update_cluster(const json& body) {
  (void)typed<api::UpdateClusterRequest>(body);
  (void)spec::apply_cluster_update(cluster().spec, body);
}

void update_cluster_software(const json& body) {
  (void)typed<api::UpdateClusterSoftwareRequest>(body);
  auto plan = controller::plan_software_update(body, cluster().layout);
  if (!plan) return;
  if (!controller::SoftwareUpdatePlan::from_json(plan->to_json())) std::abort();
  (void)controller::next_batch(*plan, cluster().layout, 0);
}

void register_host_pools(const json& body) {
  auto request = typed<api::RegisterHostPoolsRequest>(body);
  if (request) (void)endure::provider::parse_host_pools({{api::field::kPools, request->pools}});
}

// The agent service reads a lifecycle report by hand (an older agent leaves fields out).
void agent_report_lifecycle(const json& body) {
  (void)typed<api::AgentReportLifecycleRequest>(body);
  if (!body.is_object()) return;
  api::AgentReportLifecycleRequest report;
  auto status = body.find(api::field::kStatus);
  if (status == body.end() || !status->is_string()) return;
  report.status = status->get<std::string>();
  if (!report.check()) return;
  auto reported = controller::parse_lifecycle_status(report.status);
  if (!reported) std::abort();  // check() let through a status that has no name
  for (auto current : controller::all_lifecycle_statuses()) {
    (void)controller::decide_lifecycle_report(current, *reported, -1);
  }
}

void agent_heartbeat(const json& body) {
  (void)typed<api::AgentHeartbeatRequest>(body);
  if (!body.is_object()) return;
  auto findings = controller::heartbeat_findings(body);
  if (!findings) return;
  controller::HealthMonitor health([] { return 100.0; });
  health.heartbeat("i-fuzz", *findings, "c-fuzz");
  (void)health.assess("i-fuzz", true);
  endure::metrics::NodeGauges gauges;
  gauges.record("i-fuzz", body.value(api::field::kMetrics, json::object()));
}

void agent_report_findings(const json& body) {
  auto report = typed<api::AgentReportFindingsRequest>(body);
  if (!report) return;
  controller::HealthMonitor health([] { return 100.0; });
  (void)health.logged("i-fuzz", report->findings);
  (void)health.assess("i-fuzz", true);
}

// Stored as read, then judged by a reconcile pass when the check closes.
void agent_report_deep_health_check(const json& body) {
  (void)typed<api::AgentReportDeepHealthCheckRequest>(body);
  if (!body.is_object()) return;
  auto results = controller::deep_check_results(body);
  if (results) (void)controller::decide_deep_check(*results, 60);
}

void auto_resume_step_failed(const json& body) {
  (void)typed<api::AutoResumeStepFailedRequest>(body);
  if (!body.is_object()) return;
  auto failure = controller::read_step_failed(body);
  if (!failure) return;
  std::vector<controller::StepNode> nodes;
  for (const auto& name : failure->nodes) {
    controller::StepNode n;
    n.name = name;
    n.known = name.size() % 2 == 0;
    n.status = api::NodeStatus::kRunning;
    nodes.push_back(n);
  }
  (void)controller::judge_step(nodes, failure->step_start, failure->failed_at, 3);
}

struct Action {
  const char* name;
  void (*decode)(const json& body);
};

// Every action of wire.h, in all_actions()' order.
const Action kActions[] = {
    {api::kCreateCluster, create_cluster},
    {api::kDescribeCluster, [](const json& b) { (void)typed<api::DescribeClusterRequest>(b); }},
    {api::kListClusters, [](const json& b) { (void)typed<api::ListClustersRequest>(b); }},
    {api::kListClusterNodes, [](const json& b) { (void)typed<api::ListClusterNodesRequest>(b); }},
    {api::kDescribeClusterNode,
     [](const json& b) { (void)typed<api::DescribeClusterNodeRequest>(b); }},
    {api::kUpdateCluster, update_cluster},
    {api::kUpdateClusterSoftware, update_cluster_software},
    {api::kDeleteCluster, [](const json& b) { (void)typed<api::DeleteClusterRequest>(b); }},
    {api::kListClusterEvents, [](const json& b) { (void)typed<api::ListClusterEventsRequest>(b); }},
    {api::kDescribeClusterEvent,
     [](const json& b) { (void)typed<api::DescribeClusterEventRequest>(b); }},
    {api::kGetClusterNodeLog, [](const json& b) { (void)typed<api::GetClusterNodeLogRequest>(b); }},
    {api::kGetNodeExecTarget, [](const json& b) { (void)typed<api::GetNodeExecTargetRequest>(b); }},
    {api::kBatchRebootClusterNodes,
     [](const json& b) { (void)typed<api::BatchRebootClusterNodesRequest>(b); }},
    {api::kBatchReplaceClusterNodes,
     [](const json& b) { (void)typed<api::BatchReplaceClusterNodesRequest>(b); }},
    {api::kBatchDeleteClusterNodes,
     [](const json& b) { (void)typed<api::BatchDeleteClusterNodesRequest>(b); }},
    {api::kStartClusterHealthCheck,
     [](const json& b) { (void)typed<api::StartClusterHealthCheckRequest>(b); }},
    {api::kDebugInjectFault, [](const json& b) { (void)typed<api::DebugInjectFaultRequest>(b); }},
    {api::kDebugDescribeController,
     [](const json& b) { (void)typed<api::DebugDescribeControllerRequest>(b); }},
    {api::kRegisterHostPools, register_host_pools},
    {api::kListHosts, [](const json& b) { (void)typed<api::ListHostsRequest>(b); }},
    {api::kReturnHost, [](const json& b) { (void)typed<api::ReturnHostRequest>(b); }},
    {api::kAgentReportLifecycle, agent_report_lifecycle},
    {api::kAgentHeartbeat, agent_heartbeat},
    {api::kAgentReportFindings, agent_report_findings},
    {api::kAgentReportDeepHealthCheck, agent_report_deep_health_check},
    {api::kAutoResumeStepFailed, auto_resume_step_failed},
    {api::kAutoResumeStatus, [](const json& b) { (void)typed<api::AutoResumeStatusRequest>(b); }},
    {api::kReportTrainingMetrics,
     [](const json& b) { (void)typed<api::ReportTrainingMetricsRequest>(b); }},
    {api::kListTrainingRuns, [](const json& b) { (void)typed<api::ListTrainingRunsRequest>(b); }},
    {api::kGetTrainingMetrics,
     [](const json& b) { (void)typed<api::GetTrainingMetricsRequest>(b); }},
    {api::kListClusterJobs, [](const json& b) { (void)typed<api::ListClusterJobsRequest>(b); }},
    {api::kBatchAddClusterNodes,
     [](const json& b) { (void)typed<api::BatchAddClusterNodesRequest>(b); }},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The table must name every action, or a new one would go unfuzzed.
  static const bool complete = [] {
    auto all = api::all_actions();
    if (std::size(kActions) != all.size()) std::abort();
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].action != kActions[i].name) std::abort();
    }
    return true;
  }();
  (void)complete;
  if (size == 0) return 0;
  const Action& action = kActions[data[0] % std::size(kActions)];
  auto body =
      json::parse(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), nullptr, false);
  if (body.is_discarded()) return 0;
  action.decode(body);
  return 0;
}
