#include "controller/cluster_service.h"

#include <algorithm>

#include "api/wire.h"
#include "slurm/slurm_client.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace endure::controller {
namespace {

Error validation(const std::string& message) {
  return make_error(api::kValidationException, message);
}

// A required string field of a request.
Result<std::string> required_string(const json& request, const char* field) {
  if (!request.is_object()) return validation("request: must be a JSON object");
  if (!request.contains(field)) return validation(std::string(field) + ": is required");
  if (!request[field].is_string() || request[field].get<std::string>().empty()) {
    return validation(std::string(field) + ": must be a non-empty string");
  }
  return request[field].get<std::string>();
}

json instance_status(const store::InstanceRow& r) {
  return {{"Status", r.status}, {"Message", r.message}};
}

Result<spec::ClusterModel> load_model(const store::ClusterRow& cluster) {
  auto model = spec::load_cluster_model(cluster.spec, cluster.provisioning, cluster.index);
  if (!model) {
    return make_error(api::kInternalFailure,
                      "stored spec of " + cluster.name + " no longer parses: " + model.error().message);
  }
  return model;
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

std::string cluster_arn(const std::string& cluster_id) {
  return "arn:endure:local:cluster/" + cluster_id;
}

ClusterService::ClusterService(store::Store& store, provider::NodeProvider& provider,
                               const Config& config, HealthMonitor& health,
                               RecoveryManager& recovery, AutoResumeManager& auto_resume,
                               std::function<void()> wake_reconciler,
                               std::function<long long()> reconcile_passes)
    : store_(store),
      provider_(provider),
      config_(config),
      health_(health),
      recovery_(recovery),
      auto_resume_(auto_resume),
      wake_(std::move(wake_reconciler)),
      reconcile_passes_(std::move(reconcile_passes)) {}

Result<json> ClusterService::handle(const std::string& action, const json& request) {
  if (!request.is_object()) return validation("request: must be a JSON object");
  if (action == api::kCreateCluster) return create_cluster(request);
  if (action == api::kDescribeCluster) return describe_cluster(request);
  if (action == api::kListClusters) return list_clusters(request);
  if (action == api::kListClusterNodes) return list_cluster_nodes(request);
  if (action == api::kDescribeClusterNode) return describe_cluster_node(request);
  if (action == api::kUpdateCluster) return update_cluster(request);
  if (action == api::kDeleteCluster) return delete_cluster(request);
  if (action == api::kListClusterEvents) return list_cluster_events(request);
  if (action == api::kGetClusterNodeLog) return get_cluster_node_log(request);
  if (action == api::kGetNodeExecTarget) return get_node_exec_target(request);
  if (action == api::kBatchRebootClusterNodes) return batch_recover(request, RecoveryAction::kReboot);
  if (action == api::kBatchReplaceClusterNodes) {
    return batch_recover(request, RecoveryAction::kReplace);
  }
  if (action == api::kDebugInjectFault) return inject_fault(request);
  if (action == api::kDebugDescribeController) {
    return json{{"ReconcilePasses", reconcile_passes_()}};
  }
  if (action == api::kStartClusterHealthCheck) return start_health_check(request);
  return make_error("UnknownOperation", "no action named " + action);
}

Result<json> ClusterService::load_provisioning(const json& spec_json) {
  auto spec = spec::parse_cluster_spec(spec_json);
  if (!spec) return spec.error();
  std::filesystem::path provisioning_file;
  for (size_t i = 0; i < spec->groups.size(); ++i) {
    const auto& g = spec->groups[i];
    std::string field = "InstanceGroups[" + std::to_string(i) + "].LifeCycleConfig";
    auto dir = provider_.resolve_lifecycle_source(field, g.lifecycle.source_uri,
                                                  g.lifecycle.on_create);
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
    auto ev = store_.append_event({0, row.id, 0, "Cluster", "", "", "", "ClusterCreating",
                                   "CreateCluster accepted: " + std::to_string(total) +
                                       " instances in " + std::to_string(spec->groups.size()) +
                                       " instance groups"});
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

Result<store::ClusterRow> ClusterService::find_cluster(const json& request) {
  auto name = required_string(request, "ClusterName");
  if (!name) return name.error();
  std::string prefix = cluster_arn("");
  if (name->rfind(prefix, 0) == 0) {
    auto row = store_.cluster_by_id(name->substr(prefix.size()));
    if (row && row->status != "Deleted") return *row;
  } else if (auto row = store_.cluster_by_name(*name)) {
    return *row;
  }
  return make_error(api::kResourceNotFound, "ClusterName: no cluster named " + *name);
}

Result<json> ClusterService::describe_cluster(const json& request) {
  auto cluster = find_cluster(request);
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
  auto cluster = find_cluster(request);
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

Result<store::InstanceRow> ClusterService::find_node(const store::ClusterRow& cluster,
                                                     const json& request) {
  auto id = required_string(request, "NodeId");
  if (!id) return id.error();
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.instance_id == *id || r.node_name == *id) return r;
  }
  if (auto r = store_.instance(*id); r && r->cluster_id == cluster.id) return *r;
  return make_error(api::kResourceNotFound,
                    "NodeId: cluster " + cluster.name + " has no node or instance " + *id);
}

Result<json> ClusterService::describe_cluster_node(const json& request) {
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  auto node = find_node(*cluster, request);
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
  if (!node->recovery.empty()) details["Recovery"] = {{"Action", node->recovery},
                                                      {"Reason", node->recovery_reason},
                                                      {"Stage", node->recovery_stage}};
  if (!node->replaces.empty()) details["Replaces"] = node->replaces;
  return json{{"NodeDetails", details}};
}

Result<json> ClusterService::update_cluster(const json& request) {
  auto cluster = find_cluster(request);
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
  auto cluster = find_cluster(request);
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
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  long long after = 0;
  int limit = 1000;
  std::string node;
  if (request.contains("AfterEventId")) {
    if (!request["AfterEventId"].is_number_integer()) return validation("AfterEventId: must be an integer");
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
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  auto node = find_node(*cluster, request);
  if (!node) return node.error();
  auto path = provider_.lifecycle_log(cluster->id, node->instance_id);
  auto text = fs::read_file(path);
  return json{{"NodeName", node->node_name},
              {"InstanceId", node->instance_id},
              {"LogPath", path.string()},
              {"Log", text ? *text : ""}};
}

Result<json> ClusterService::get_node_exec_target(const json& request) {
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  auto node = find_node(*cluster, request);
  if (!node) return node.error();
  int pid = provider_.pid(cluster->id, node->instance_id);
  if (pid <= 0) {
    return make_error(api::kConflictException, "NodeId: node " + node->node_name + " (" +
                                                   node->instance_id + ") is not running");
  }
  return json{{"NodeName", node->node_name}, {"InstanceId", node->instance_id}, {"Pid", pid}};
}

Result<json> ClusterService::handle_auto_resume(const std::string& action,
                                                const std::string& token, bool operator_ok,
                                                const json& request) {
  if (!request.is_object()) return validation("request: must be a JSON object");
  auto cluster = find_cluster(request);
  // One answer for "no such cluster" and "wrong token" to a caller without the operator's.
  if (!operator_ok) {
    auto expected = cluster ? store_.auto_resume_token(cluster->id) : Result<std::string>("");
    if (!cluster || !expected || expected->empty() || !ids::same_secret(token, *expected)) {
      return make_error(api::kUnauthorized, "not a valid auto-resume token for this cluster");
    }
  }
  if (!cluster) return cluster.error();
  if (action == api::kAutoResumeStepFailed) {
    auto reply = auto_resume_.step_failed(*cluster, request);
    if (reply && reply->value("Resume", false)) wake_();
    return reply;
  }
  if (action == api::kAutoResumeStatus) return auto_resume_.status(*cluster, request);
  return make_error("UnknownOperation", "no auto-resume action named " + action);
}

Result<json> ClusterService::handle_agent(const std::string& action, const std::string& instance_id,
                                          const std::string& token, const json& request) {
  auto row = store_.instance(instance_id);
  // One answer for "no such instance" and "wrong token": a node learns nothing of others.
  if (!row || row->agent_token != token || row->terminated_at > 0) {
    return make_error(api::kUnauthorized, "not a valid join token for " + instance_id);
  }
  if (request.value("InstanceId", instance_id) != instance_id) {
    return make_error(api::kUnauthorized, "a node may report only for itself");
  }
  if (action == api::kAgentHeartbeat) {
    health_.heartbeat(instance_id, request.value("Findings", json::array()));
    // The reply carries orders: a deep health check to run while one is open for it.
    json reply = json::object();
    if (row->status == "DeepHealthCheckInProgress" && row->deep_check.is_object()) {
      reply["DeepHealthCheck"] = row->deep_check;
    }
    return reply;
  }
  if (action == api::kAgentReportDeepHealthCheck) {
    std::string id = request.value("Id", "");
    if (!request.contains("Results") || !request["Results"].is_array()) {
      return validation("Results: must be an array");
    }
    Status s = store_.mutate_instance(instance_id, [&](store::InstanceRow& r) -> Status {
      if (!r.deep_check.is_object() || r.deep_check.value("Id", "") != id) {
        return make_error(api::kConflictException, "no deep health check " + id + " is open");
      }
      r.deep_result = request["Results"];
      return {};
    });
    if (!s) return s.error();
    wake_();
    return json::object();
  }
  health_.heartbeat(instance_id, json::array());
  if (action != api::kAgentReportLifecycle) {
    return make_error("UnknownOperation", "no agent action named " + action);
  }
  std::string status = request.value("Status", "");
  if (status != "InProgress" && status != "Succeeded" && status != "Failed") {
    return validation("Status: must be one of InProgress, Succeeded, Failed");
  }
  bool changed = false;
  Status s = store_.mutate_instance(instance_id, [&](store::InstanceRow& r) -> Status {
    // Terminal outcomes stay, until a reboot asks again ("Rebooting").
    if (r.lifecycle_status == "Succeeded" || r.lifecycle_status == "Failed") return {};
    if (r.lifecycle_status == "Rebooting" && status == "InProgress") return {};
    changed = r.lifecycle_status != status;
    bool booting = r.lifecycle_status == "Rebooting";
    r.lifecycle_status = status;
    r.lifecycle_exit = request.value("ExitCode", -1);
    r.lifecycle_tail = request.value("LastLines", "");
    if (!changed || status == "InProgress") return {};
    auto ev = store_.append_event(
        {0, r.cluster_id, 0, "Instance", r.group, r.instance_id, r.node_name,
         booting ? (status == "Succeeded" ? "BootScriptsSucceeded" : "BootScriptsFailed")
                 : (status == "Succeeded" ? "LifecycleSucceeded" : "LifecycleFailed"),
         std::string(booting ? "boot scripts " : "OnCreate ") +
             (status == "Succeeded" ? "succeeded" : "failed") + " with exit code " +
             std::to_string(r.lifecycle_exit)});
    return ev ? Status{} : Status(ev.error());
  });
  if (!s) return s.error();
  if (changed) wake_();
  return json::object();
}

Result<json> ClusterService::batch_recover(const json& request, RecoveryAction action) {
  auto cluster = find_cluster(request);
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
  std::string verb = action == RecoveryAction::kReboot ? "BatchRebootClusterNodes"
                                                       : "BatchReplaceClusterNodes";
  for (const auto& id : request["NodeIds"]) {
    auto s = recovery_.request(*cluster, layout, id.get<std::string>(), action,
                               "requested by " + verb);
    if (s) successful.push_back(id);
    else failed.push_back({{"NodeId", id}, {"Code", s.error().code}, {"Message", s.error().message}});
  }
  if (!successful.empty()) wake_();
  return json{{"Successful", successful}, {"Failed", failed}};
}

Result<json> ClusterService::start_health_check(const json& request) {
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  if (cluster->status != "InService") {
    return make_error(api::kConflictException,
                      "ClusterName: " + cluster->name + " is " + cluster->status +
                          "; deep health checks run on an InService cluster");
  }
  auto model = load_model(*cluster);
  if (!model) return model.error();
  const spec::ClusterLayout& layout = model->layout;
  auto rows = store_.instances(cluster->id, true);
  std::vector<store::InstanceRow> chosen;
  if (request.contains("NodeIds")) {
    if (!request["NodeIds"].is_array() || request["NodeIds"].empty() ||
        request["NodeIds"].size() > 64) {
      return validation("NodeIds: must be an array of 1 to 64 node names or instance ids");
    }
    for (size_t i = 0; i < request["NodeIds"].size(); ++i) {
      const auto& id = request["NodeIds"][i];
      std::string field = "NodeIds[" + std::to_string(i) + "]";
      if (!id.is_string()) return validation(field + ": must be a string");
      auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) {
        return r.instance_id == id.get<std::string>() || r.node_name == id.get<std::string>();
      });
      if (it == rows.end()) {
        return make_error(api::kResourceNotFound, field + ": no node " + id.get<std::string>());
      }
      chosen.push_back(*it);
    }
  } else {
    for (const auto& r : rows) {
      const auto* slot = layout.find(r.node_name);
      if (slot && slot->role == spec::NodeRole::kWorker) chosen.push_back(r);
    }
  }
  if (chosen.empty()) return validation("NodeIds: the cluster has no worker node to check");
  std::vector<std::string> names;
  for (const auto& r : chosen) {
    const auto* slot = layout.find(r.node_name);
    if (!slot || slot->role != spec::NodeRole::kWorker) {
      return validation("NodeIds: " + r.node_name + " is not a worker node");
    }
    if (r.status != "Running" || !r.recovery.empty()) {
      return make_error(api::kConflictException,
                        "NodeIds: " + r.node_name + " is " + r.status + ", not Running");
    }
    names.push_back(r.node_name);
  }
  // The nodes sit in a maintenance reservation meanwhile: no new job lands on them.
  const store::InstanceRow* controller = nullptr;
  for (const auto& r : rows) {
    if (r.node_name == layout.controller_node) controller = &r;
  }
  if (!controller) return make_error(api::kConflictException, "the controller node is not running");
  std::string check_id = "hc-" + ids::random_hex(8);
  std::string reservation = "endure-" + check_id;
  slurm::SlurmClient client([&](const std::vector<std::string>& argv, std::chrono::milliseconds t) {
    return provider_.exec(cluster->id, controller->instance_id, argv, t);
  });
  if (auto s = client.create_maintenance_reservation(reservation, names); !s) return s.error();
  json nodes = json::array();
  // Every node's order and event at once: a check starts on all its nodes or on none.
  Status started = store_.transaction([&]() -> Status {
    for (size_t i = 0; i < chosen.size(); ++i) {
      // Each node sends to the next one in a ring: every link is measured once.
      const auto* peer =
          chosen.size() > 1 ? layout.find(chosen[(i + 1) % chosen.size()].node_name) : nullptr;
      const auto* self = layout.find(chosen[i].node_name);
      json order = {{"Id", check_id},
                    {"Reservation", reservation},
                    {"Address", self->address},
                    {"Port", api::kDeepCheckNetworkPort},
                    {"Started", ids::now_seconds()}};
      if (peer) order["Peer"] = peer->address;
      auto text = check_id + (peer ? ": network test to " + peer->node_name : "");
      Status s = store_.transition(chosen[i].instance_id,
                                   [&](store::InstanceRow& r) {
                                     r.status = "DeepHealthCheckInProgress";
                                     r.message = "deep health check " + check_id;
                                     r.deep_check = order;
                                     r.deep_result = nullptr;
                                   },
                                   {{"DeepHealthCheckStarted", text}});
      if (!s) return s;
      nodes.push_back(chosen[i].node_name);
    }
    return {};
  });
  if (!started) {
    log::ok(client.delete_reservation(reservation), cluster->name + ": " + reservation);
    return started.error();
  }
  wake_();
  return json{{"HealthCheckId", check_id}, {"Reservation", reservation}, {"Nodes", nodes}};
}

Result<json> ClusterService::inject_fault(const json& request) {
  auto cluster = find_cluster(request);
  if (!cluster) return cluster.error();
  auto node = find_node(*cluster, request);
  if (!node) return node.error();
  auto kind = required_string(request, "Kind");
  if (!kind) return kind.error();
  const std::string& c = cluster->id;
  const std::string& id = node->instance_id;
  if (!provider_.running(c, id)) {
    return make_error(api::kConflictException, "NodeId: " + node->node_name + " is not running");
  }
  Status s;
  std::string what;
  if (*kind == "crash") {
    s = provider_.terminate(c, id);
    what = "killed the node's pid namespace";
  } else if (*kind == "hang") {
    s = provider_.freeze(c, id);
    what = "stopped every process of the node";
  } else if (*kind == "xid") {
    s = provider_.append_kernel_log(
        c, id, "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the bus.");
    what = "logged an Xid 79 in the node's kernel log";
  } else if (*kind == "ecc") {
    s = provider_.append_kernel_log(
        c, id,
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 "
        "page:0x1234 offset:0x0 grain:32 - OVERFLOW)");
    what = "logged an uncorrectable memory error in the node's kernel log";
  } else if (*kind == "disk-full") {
    s = provider_.fill_local_disk(c, id);
    what = "filled the node's local disk";
  } else if (*kind == "fsx-hang") {
    // Stops the node's /fsx server: every call on /fsx in that node blocks, as on a hung
    // network file system; the other nodes' /fsx goes on.
    auto out = provider_.exec(c, id, {"/bin/bash", "-c", "kill -STOP \"$(cat /opt/endure/fsx.pid)\""},
                              std::chrono::seconds(10));
    if (out.exit_code != 0) s = make_error(api::kConflictException, "no /fsx server to stop: " + out.err);
    what = "made /fsx unresponsive on the node";
  } else if (*kind == "slurmd-kill") {
    auto out = provider_.exec(c, id, {"/bin/bash", "-c", "kill -9 \"$(cat /run/slurm/slurmd.pid)\""},
                              std::chrono::seconds(10));
    if (out.exit_code != 0) s = make_error(api::kConflictException, "no slurmd to kill: " + out.err);
    what = "killed the node's slurmd";
  } else {
    return validation(
        "Kind: must be one of crash, hang, xid, ecc, disk-full, slurmd-kill, fsx-hang");
  }
  if (!s) return s.error();
  // The fault is made: its record failing is logged, not the drill.
  auto recorded = store_.append_event({0, c, 0, "Instance", node->group, id, node->node_name,
                                       "FaultInjected", *kind + ": " + what});
  if (!recorded) log::error("{}: record the fault: {}", node->node_name, recorded.error().message);
  return json{{"NodeName", node->node_name}, {"InstanceId", id}, {"Kind", *kind},
              {"Description", what}};
}

}  // namespace endure::controller
