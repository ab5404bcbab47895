// ClusterService's node actions: ListClusterNodes, DescribeClusterNode, GetClusterNodeLog,
// GetNodeExecTarget and BatchRebootClusterNodes / BatchReplaceClusterNodes.
#include "controller/front/cluster_service.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "api/messages.h"
#include "api/wire.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/lookup.h"
#include "controller/core/node_state.h"
#include "slurm/slurm_client.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace endure::controller {
namespace {

// Filled into a NodeDetails too: a node's details start with its summary.
void fill_summary(api::ClusterNodeSummary& out, const store::ClusterRow& cluster,
                  const store::InstanceRow& r, const spec::ClusterSpec& spec) {
  const auto* group = spec.find_group(r.group);
  out.instance_group_name = r.group;
  out.instance_id = r.instance_id;
  out.node_logical_id = logical_id_of(cluster, r);
  out.node_name = r.node_name;
  out.instance_type = group ? group->instance_type : "";
  out.instance_status = {name(r.status), r.message};
  out.launch_time = ids::iso_time(r.launch_time);
}

}  // namespace

Result<json> ClusterService::list_cluster_nodes(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto spec = spec::parse_cluster_spec(cluster->spec);
  if (!spec) return make_error(api::kInternalFailure, "stored spec no longer parses");
  // Read after find_cluster, which words a bad ClusterName as endured always has; only
  // InstanceGroupNameContains can fail here.
  auto typed = api::ListClusterNodesRequest::from_json(request);
  if (!typed) return typed.error();
  std::string contains = typed->instance_group_name_contains.value_or("");
  api::ListClusterNodesReply reply;
  for (const auto& r : store_.instances(cluster->id, true)) {
    if (!contains.empty() && r.group.find(contains) == std::string::npos) continue;
    fill_summary(reply.cluster_node_summaries.emplace_back(), *cluster, r, *spec);
  }
  return reply.to_json();
}

Result<json> ClusterService::describe_cluster_node(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  auto model = load_model(store_, *cluster);
  if (!model) return model.error();
  const spec::ClusterSpec* spec = &model->spec;
  const spec::ClusterLayout& layout = model->layout;
  api::DescribeClusterNodeReply reply;
  api::NodeDetails& details = reply.node_details;
  fill_summary(details, *cluster, *node, *spec);
  if (const auto* g = spec->find_group(node->group)) {
    details.life_cycle_config = life_cycle_config(*g);
    details.threads_per_core = g->threads_per_core;
  }
  details.life_cycle.status = name(node->lifecycle_status);
  if (node->lifecycle_exit >= 0) details.life_cycle.exit_code = node->lifecycle_exit;
  details.life_cycle.last_lines = node->lifecycle_tail;
  details.life_cycle.log_path = provider_.lifecycle_log(cluster->id, node->instance_id).string();
  if (const auto* slot = layout.find(node->node_name)) {
    details.private_primary_ip = slot->address;
    details.private_dns_hostname = slot->node_name;
    if (slot->role == spec::NodeRole::kWorker) details.slurmd_port = slot->slurmd_port;
    details.role = spec::role_name(slot->role);
  }
  if (node->terminated_at > 0) details.termination_time = ids::iso_time(node->terminated_at);
  double age = health_.heartbeat_age(node->instance_id);
  if (age >= 0) details.seconds_since_heartbeat = age;
  details.health = name(node->health);
  if (!node->last_verdict.empty()) details.last_verdict = node->last_verdict;
  if (node->recovery.has_value()) {
    details.recovery = api::NodeRecoveryInfo{name(*node->recovery), node->recovery_reason,
                                             name(node->recovery_stage)};
  }
  if (!node->replaces.empty()) details.replaces = node->replaces;
  return reply.to_json();
}

Result<json> ClusterService::get_cluster_node_log(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  auto path = provider_.lifecycle_log(cluster->id, node->instance_id);
  auto text = fs::read_file(path);
  return api::GetClusterNodeLogReply{node->node_name, node->instance_id, path.string(),
                                     text ? *text : ""}
      .to_json();
}

Result<json> ClusterService::get_node_exec_target(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  auto on_hosts = host_placements(store_, cluster->id);
  if (auto it = on_hosts.find(node->node_name); it != on_hosts.end()) {
    return make_error(api::kConflictException,
                      "NodeId: node " + node->node_name + " runs on registered host " +
                          it->second.hostname + " (" + it->second.address +
                          "): reach it with ssh");
  }
  int pid = provider_.pid(cluster->id, node->instance_id);
  if (pid <= 0) {
    return make_error(api::kConflictException, "NodeId: node " + node->node_name + " (" +
                                                   node->instance_id + ") is not running");
  }
  return api::GetNodeExecTargetReply{node->node_name, node->instance_id, pid}.to_json();
}

Result<json> ClusterService::batch_recover(const json& request, RecoveryAction action) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  // NodeIds checked by hand first: endured words a missing or non-array NodeIds, and a
  // bad entry, differently from BatchNodesRequest (which would say "must be an array" and
  // "NodeIds[1]: must be a string"). After these checks the typed read cannot fail.
  const json node_ids =
      request.contains(api::field::kNodeIds) ? request[api::field::kNodeIds] : json();
  if (!node_ids.is_array() || node_ids.empty() || node_ids.size() > size_t{api::kMaxBatchNodes}) {
    return invalid("NodeIds: must be an array of 1 to " + std::to_string(api::kMaxBatchNodes) +
                   " instance ids");
  }
  for (const auto& id : node_ids) {
    if (!id.is_string()) return invalid("NodeIds: every entry must be an instance id string");
  }
  auto typed = api::BatchNodesRequest::from_json(request);
  if (!typed) return typed.error();
  auto model = load_model(store_, *cluster);
  if (!model) return model.error();
  const spec::ClusterLayout& layout = model->layout;
  api::BatchNodesReply reply;
  std::string verb = action == RecoveryAction::kReboot ? api::kBatchRebootClusterNodes
                                                       : api::kBatchReplaceClusterNodes;
  const auto rows = store_.instances(cluster->id, true);
  for (const auto& id : typed->node_ids) {
    // A NodeLogicalId names its slot's live instance; other ids are instance ids.
    std::string instance_id = id;
    if (const auto* r = live_node_named(*cluster, rows, id); r && logical_id_of(*cluster, *r) == id) {
      instance_id = r->instance_id;
    }
    auto s = recovery_.request(*cluster, layout, instance_id, action, "requested by " + verb);
    if (s)
      reply.successful.push_back(id);
    else
      reply.failed.push_back({id, s.error().code, s.error().message});
  }
  if (!reply.successful.empty()) wake_();
  return reply.to_json();
}

}  // namespace endure::controller
