#include "controller/cluster_service.h"

#include <algorithm>

#include "api/wire.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/lookup.h"
#include "slurm/slurm_client.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace endure::controller {
namespace {

json instance_status(const store::InstanceRow& r) {
  return {{"Status", r.status}, {"Message", r.message}};
}

json node_summary(const store::InstanceRow& r, const spec::ClusterSpec& spec) {
  const auto* group = spec.find_group(r.group);
  return {{"InstanceGroupName", r.group},
          {"InstanceId", r.instance_id},
          {"NodeName", r.node_name},
          {"InstanceType", group ? group->instance_type : ""},
          {"InstanceStatus", instance_status(r)},
          {"LaunchTime", ids::iso_time(r.launch_time)}};
}

}  // namespace

ClusterService::ClusterService(store::Store& store, provider::NodeProvider& provider,
                               const Config& config, HealthMonitor& health,
                               RecoveryManager& recovery, std::function<void()> wake_reconciler)
    : store_(store),
      provider_(provider),
      config_(config),
      health_(health),
      recovery_(recovery),
      wake_(std::move(wake_reconciler)) {}

Result<json> ClusterService::load_provisioning(const json& spec_json) {
  auto spec = spec::parse_cluster_spec(spec_json);
  if (!spec) return spec.error();
  std::filesystem::path provisioning_file;
  for (size_t i = 0; i < spec->groups.size(); ++i) {
    const auto& g = spec->groups[i];
    std::string field = "InstanceGroups[" + std::to_string(i) + "].LifeCycleConfig";
    auto dir =
        provider_.resolve_lifecycle_source(field, g.lifecycle.source_uri, g.lifecycle.on_create);
    if (!dir) return dir.error();
    if (provisioning_file.empty() && std::filesystem::exists(*dir / spec::kProvisioningFile)) {
      provisioning_file = *dir / spec::kProvisioningFile;
    }
  }
  if (provisioning_file.empty()) {
    return validation("InstanceGroups[0].LifeCycleConfig.SourceS3Uri: no lifecycle folder holds " +
                      std::string(spec::kProvisioningFile) +
                      ", which names the controller, login and worker groups");
  }
  auto text = fs::read_file(provisioning_file);
  if (!text) return validation(std::string(spec::kProvisioningFile) + ": " + text.error().message);
  auto params_json = json::parse(*text, nullptr, false);
  if (params_json.is_discarded()) {
    return validation(std::string(spec::kProvisioningFile) + ": is not valid JSON");
  }
  auto params = spec::parse_provisioning(params_json, *spec);
  if (!params) return params.error();
  return params->to_json();
}

Result<json> ClusterService::create_cluster(const json& request) {
  auto spec = spec::parse_cluster_spec(request);
  if (!spec) return spec.error();
  auto provisioning = load_provisioning(spec->to_json());
  if (!provisioning) return provisioning.error();

  store::ClusterRow row;
  Status created = store_.transaction([&]() -> Status {
    if (store_.cluster_by_name(spec->name)) {
      return make_error(api::kResourceInUse,
                        "ClusterName: a cluster named " + spec->name + " already exists");
    }
    row.id = ids::new_cluster_id();
    // Host-wide, not per store: another endured on this host may hold indexes too.
    auto index = provider_.claim_cluster_index(row.id, 0);
    if (!index) return index.error();
    row.index = *index;
    row.name = spec->name;
    row.arn = cluster_arn(row.id);
    row.status = "Creating";
    row.spec = spec->to_json();
    row.provisioning = *provisioning;
    row.created_at = row.updated_at = ids::now_seconds();
    if (auto s = store_.insert_cluster(row); !s) return s;
    int total = 0;
    for (const auto& g : spec->groups) total += g.instance_count;
    auto ev =
        store_.append_event({0, row.id, 0, "Cluster", "", "", "", "ClusterCreating",
                             "CreateCluster accepted: " + std::to_string(total) + " instances in " +
                                 std::to_string(spec->groups.size()) + " instance groups"});
    return ev ? Status{} : Status(ev.error());
  });
  if (!created) {
    // A claimed index goes back with the folder claiming it; nothing else was made.
    if (row.index > 0) log::ok(provider_.remove_cluster(row.id), "release " + row.id);
    return created.error();
  }
  crash_point("create.after_commit");
  log::info("cluster {} ({}) accepted", row.name, row.id);
  wake_();
  return json{{"ClusterArn", row.arn}};
}

Result<json> ClusterService::describe_cluster(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto model = load_model(*cluster);
  if (!model) return model.error();
  const spec::ClusterSpec* spec = &model->spec;
  const spec::ProvisioningParameters* params = &model->params;
  const spec::ClusterLayout& layout = model->layout;
  auto instances = store_.instances(cluster->id, true);
  json groups = json::array();
  for (const auto& g : spec->groups) {
    int current = 0;
    for (const auto& i : instances) current += i.group == g.name && i.status == "Running";
    json entry = {{"InstanceGroupName", g.name},
                  {"InstanceType", g.instance_type},
                  {"CurrentCount", current},
                  {"TargetCount", g.instance_count},
                  {"LifeCycleConfig",
                   {{"SourceS3Uri", g.lifecycle.source_uri}, {"OnCreate", g.lifecycle.on_create}}},
                  {"ThreadsPerCore", g.threads_per_core},
                  {"Role", spec::role_name(params->role_of(g.name))}};
    if (auto p = params->partition_of(g.name); !p.empty()) entry["PartitionName"] = p;
    groups.push_back(entry);
  }
  json reply = {{"ClusterArn", cluster->arn},
                {"ClusterId", cluster->id},
                {"ClusterName", cluster->name},
                {"ClusterStatus", cluster->status},
                {"CreationTime", ids::iso_time(cluster->created_at)}};
  if (!cluster->failure_message.empty()) reply["FailureMessage"] = cluster->failure_message;
  reply["InstanceGroups"] = groups;
  reply["NodeRecovery"] = spec->node_recovery;
  reply["SlurmControllerNode"] = layout.controller_node;
  reply["SlurmctldPort"] = layout.slurmctld_port;
  reply["SharedFolder"] = (config_.clusters_dir() / cluster->id / "fsx").string();
  return reply;
}

Result<json> ClusterService::list_clusters(const json&) {
  json summaries = json::array();
  for (const auto& c : store_.clusters()) {
    summaries.push_back({{"ClusterArn", c.arn},
                         {"ClusterId", c.id},
                         {"ClusterName", c.name},
                         {"ClusterStatus", c.status},
                         {"CreationTime", ids::iso_time(c.created_at)}});
  }
  return json{{"ClusterSummaries", summaries}};
}

Result<json> ClusterService::list_cluster_nodes(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto spec = spec::parse_cluster_spec(cluster->spec);
  if (!spec) return make_error(api::kInternalFailure, "stored spec no longer parses");
  std::string contains;
  if (request.contains("InstanceGroupNameContains")) {
    if (!request["InstanceGroupNameContains"].is_string()) {
      return validation("InstanceGroupNameContains: must be a string");
    }
    contains = request["InstanceGroupNameContains"].get<std::string>();
  }
  json nodes = json::array();
  for (const auto& r : store_.instances(cluster->id, true)) {
    if (!contains.empty() && r.group.find(contains) == std::string::npos) continue;
    nodes.push_back(node_summary(r, *spec));
  }
  return json{{"ClusterNodeSummaries", nodes}};
}

Result<json> ClusterService::describe_cluster_node(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  auto model = load_model(*cluster);
  if (!model) return model.error();
  const spec::ClusterSpec* spec = &model->spec;
  const spec::ClusterLayout& layout = model->layout;
  json details = node_summary(*node, *spec);
  if (const auto* g = spec->find_group(node->group)) {
    details["LifeCycleConfig"] = {{"SourceS3Uri", g->lifecycle.source_uri},
                                  {"OnCreate", g->lifecycle.on_create}};
    details["ThreadsPerCore"] = g->threads_per_core;
  }
  json lifecycle = {{"Status", node->lifecycle_status}};
  if (node->lifecycle_exit >= 0) lifecycle["ExitCode"] = node->lifecycle_exit;
  lifecycle["LastLines"] = node->lifecycle_tail;
  lifecycle["LogPath"] = provider_.lifecycle_log(cluster->id, node->instance_id).string();
  details["LifeCycle"] = lifecycle;
  if (const auto* slot = layout.find(node->node_name)) {
    details["PrivatePrimaryIp"] = slot->address;
    details["PrivateDnsHostname"] = slot->node_name;
    if (slot->role == spec::NodeRole::kWorker) details["SlurmdPort"] = slot->slurmd_port;
    details["Role"] = spec::role_name(slot->role);
  }
  if (node->terminated_at > 0) details["TerminationTime"] = ids::iso_time(node->terminated_at);
  double age = health_.heartbeat_age(node->instance_id);
  if (age >= 0) details["SecondsSinceHeartbeat"] = age;
  details["Health"] = node->health;
  if (!node->last_verdict.empty()) details["LastVerdict"] = node->last_verdict;
  if (!node->recovery.empty())
    details["Recovery"] = {{"Action", node->recovery},
                           {"Reason", node->recovery_reason},
                           {"Stage", node->recovery_stage}};
  if (!node->replaces.empty()) details["Replaces"] = node->replaces;
  return json{{"NodeDetails", details}};
}

Result<json> ClusterService::update_cluster(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto current = spec::parse_cluster_spec(cluster->spec);
  if (!current) return make_error(api::kInternalFailure, "stored spec no longer parses");
  auto updated = spec::apply_cluster_update(*current, request);
  if (!updated) return updated.error();
  // The roles must still hold (the controller group keeps exactly one instance).
  auto params = spec::parse_provisioning(cluster->provisioning, *updated);
  if (!params) return params.error();
  Status changed = store_.mutate_cluster(cluster->id, [&](store::ClusterRow& row) -> Status {
    if (row.status != "InService" && row.status != "Updating") {
      return make_error(api::kConflictException, "ClusterName: cluster " + row.name + " is " +
                                                     row.status +
                                                     "; it can be updated when InService");
    }
    row.spec = updated->to_json();
    row.status = "Updating";
    row.updated_at = ids::now_seconds();
    std::string counts;
    for (const auto& g : updated->groups) {
      counts += (counts.empty() ? "" : ", ") + g.name + "=" + std::to_string(g.instance_count);
    }
    auto ev = store_.append_event(
        {0, row.id, 0, "Cluster", "", "", "", "ClusterUpdating", "UpdateCluster: " + counts});
    return ev ? Status{} : Status(ev.error());
  });
  if (!changed) return changed.error();
  wake_();
  return json{{"ClusterArn", cluster->arn}};
}

Result<json> ClusterService::delete_cluster(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  Status changed = store_.mutate_cluster(cluster->id, [&](store::ClusterRow& row) -> Status {
    if (row.status == "Deleting") return {};
    row.status = "Deleting";
    auto ev = store_.append_event(
        {0, row.id, 0, "Cluster", "", "", "", "ClusterDeleting", "DeleteCluster accepted"});
    return ev ? Status{} : Status(ev.error());
  });
  if (!changed) return changed.error();
  wake_();
  return json{{"ClusterArn", cluster->arn}};
}

Result<json> ClusterService::list_cluster_events(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  long long after = 0;
  int limit = 1000;
  std::string node;
  if (request.contains("AfterEventId")) {
    if (!request["AfterEventId"].is_number_integer())
      return validation("AfterEventId: must be an integer");
    after = request["AfterEventId"].get<long long>();
  }
  if (request.contains("MaxResults")) {
    if (!request["MaxResults"].is_number_integer() || request["MaxResults"].get<int>() < 1 ||
        request["MaxResults"].get<int>() > 10000) {
      return validation("MaxResults: must be an integer from 1 to 10000");
    }
    limit = request["MaxResults"].get<int>();
  }
  if (request.contains("NodeName")) {
    if (!request["NodeName"].is_string()) return validation("NodeName: must be a string");
    node = request["NodeName"].get<std::string>();
  }
  json events = json::array();
  for (const auto& e : store_.events(cluster->id, after, limit, node)) {
    json entry = {{"EventId", e.id},
                  {"ClusterName", cluster->name},
                  {"ClusterArn", cluster->arn},
                  {"ResourceType", e.resource_type}};
    if (!e.group.empty()) entry["InstanceGroupName"] = e.group;
    if (!e.instance_id.empty()) entry["InstanceId"] = e.instance_id;
    if (!e.node_name.empty()) entry["NodeName"] = e.node_name;
    entry["EventTime"] = ids::iso_time(e.time);
    entry["EventType"] = e.type;
    entry["Description"] = e.description;
    events.push_back(entry);
  }
  return json{{"Events", events}};
}

Result<json> ClusterService::get_cluster_node_log(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  auto path = provider_.lifecycle_log(cluster->id, node->instance_id);
  auto text = fs::read_file(path);
  return json{{"NodeName", node->node_name},
              {"InstanceId", node->instance_id},
              {"LogPath", path.string()},
              {"Log", text ? *text : ""}};
}

Result<json> ClusterService::get_node_exec_target(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  int pid = provider_.pid(cluster->id, node->instance_id);
  if (pid <= 0) {
    return make_error(api::kConflictException, "NodeId: node " + node->node_name + " (" +
                                                   node->instance_id + ") is not running");
  }
  return json{{"NodeName", node->node_name}, {"InstanceId", node->instance_id}, {"Pid", pid}};
}

Result<json> ClusterService::batch_recover(const json& request, RecoveryAction action) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  if (!request.contains("NodeIds") || !request["NodeIds"].is_array() ||
      request["NodeIds"].empty() || request["NodeIds"].size() > 25) {
    return validation("NodeIds: must be an array of 1 to 25 instance ids");
  }
  for (const auto& id : request["NodeIds"]) {
    if (!id.is_string()) return validation("NodeIds: every entry must be an instance id string");
  }
  auto model = load_model(*cluster);
  if (!model) return model.error();
  const spec::ClusterLayout& layout = model->layout;
  json successful = json::array(), failed = json::array();
  std::string verb =
      action == RecoveryAction::kReboot ? "BatchRebootClusterNodes" : "BatchReplaceClusterNodes";
  for (const auto& id : request["NodeIds"]) {
    auto s =
        recovery_.request(*cluster, layout, id.get<std::string>(), action, "requested by " + verb);
    if (s)
      successful.push_back(id);
    else
      failed.push_back({{"NodeId", id}, {"Code", s.error().code}, {"Message", s.error().message}});
  }
  if (!successful.empty()) wake_();
  return json{{"Successful", successful}, {"Failed", failed}};
}

}  // namespace endure::controller
