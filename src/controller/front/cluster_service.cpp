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
api::LifeCycleConfig life_cycle_config(const spec::InstanceGroupSpec& g) {
  return {g.lifecycle.source_uri, g.lifecycle.on_create};
}

namespace {

// An event as ListClusterEvents and DescribeClusterEvent show it.
api::Event event_entry(const store::ClusterRow& cluster, const store::EventRow& e) {
  api::Event entry;
  entry.event_id = e.id;
  entry.cluster_name = cluster.name;
  entry.cluster_arn = cluster.arn;
  entry.resource_type = e.resource_type;
  if (!e.group.empty()) entry.instance_group_name = e.group;
  if (!e.instance_id.empty()) entry.instance_id = e.instance_id;
  if (!e.node_name.empty()) entry.node_name = e.node_name;
  entry.event_time = ids::iso_time(e.time);
  entry.event_type = e.type;
  entry.description = e.description;
  return entry;
}

// Groups on host pools draw from pools registered now, their nodes reach endured over TLS,
// and endured can log in to their shared file server.
Status check_host_pools(store::Store& store, const Config& config, const spec::ClusterSpec& spec) {
  std::set<std::string> pools;
  for (const auto& h : store.hosts()) pools.insert(h.pool);
  std::vector<spec::FieldError> errors;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const std::string& pool = spec.groups[i].host_pool;
    if (pool.empty()) continue;
    std::string path = "InstanceGroups[" + std::to_string(i) + "].HostPool";
    if (!pools.count(pool)) {
      errors.push_back({path, "no pool named " + pool + " is registered (RegisterHostPools)"});
    } else if (config.agent_tls_port <= 0) {
      errors.push_back({path, "nodes on registered hosts reach endured over TLS: set "
                              "AgentTlsPort in config.json"});
    }
  }
  // endured logs in to the file server with this key when it first prepares the cluster.
  if (spec.shared_fs && ::access(spec.shared_fs->identity_file.c_str(), R_OK) != 0) {
    errors.push_back({"SharedFileSystem.IdentityFile",
                      "endured cannot read " + spec.shared_fs->identity_file + ": " +
                          std::strerror(errno)});
  }
  if (errors.empty()) return {};
  return make_error(api::kValidationException, spec::describe(errors));
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
  // The roles from the request's SlurmConfig, else from the file; from both, they must agree.
  auto from_config = spec::roles_from_slurm_config(*spec);
  if (provisioning_file.empty()) {
    if (from_config) return from_config->to_json();
    return invalid("InstanceGroups[0].LifeCycleConfig.SourceS3Uri: no lifecycle folder holds " +
                   std::string(spec::kProvisioningFile) +
                   ", which names the controller, login and worker groups (or give every "
                   "group a SlurmConfig)");
  }
  auto text = fs::read_file(provisioning_file);
  if (!text) return invalid(std::string(spec::kProvisioningFile) + ": " + text.error().message);
  auto params_json = json::parse(*text, nullptr, false);
  if (params_json.is_discarded()) {
    return invalid(std::string(spec::kProvisioningFile) + ": is not valid JSON");
  }
  auto params = spec::parse_provisioning(params_json, *spec);
  if (!params) return params.error();
  if (from_config) {
    auto disagreements = spec::role_disagreements(*spec, *from_config, *params);
    if (!disagreements.empty()) return invalid(spec::describe(disagreements));
    return from_config->to_json();
  }
  return params->to_json();
}

Result<json> ClusterService::create_cluster(const json& request) {
  auto spec = spec::parse_cluster_spec(request);
  if (!spec) return spec.error();
  if (auto s = check_host_pools(store_, config_, *spec); !s) return s.error();
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
    row.status = ClusterStatus::kCreating;
    row.spec = spec->to_json();
    // Every node is launched with the spec's memory tier: nothing to push to running ones.
    row.applied_memory_store = spec::memory_store_setting(spec->tiered_storage);
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
  return api::CreateClusterReply{row.arn}.to_json();
}

Result<json> ClusterService::describe_cluster(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto model = load_model(store_, *cluster);
  if (!model) return model.error();
  const spec::ClusterSpec* spec = &model->spec;
  const spec::ProvisioningParameters* params = &model->params;
  const spec::ClusterLayout& layout = model->layout;
  auto instances = store_.instances(cluster->id, true);
  api::DescribeClusterReply reply;
  for (const auto& g : spec->groups) {
    int current = 0;
    for (const auto& i : instances)
      current += i.group == g.name && i.status == NodeStatus::kRunning;
    api::InstanceGroupDetails entry;
    entry.instance_group_name = g.name;
    entry.instance_type = g.instance_type;
    entry.current_count = current;
    entry.target_count = g.instance_count;
    entry.life_cycle_config = life_cycle_config(g);
    entry.threads_per_core = g.threads_per_core;
    entry.role = spec::role_name(params->role_of(g.name));
    if (auto p = params->partition_of(g.name); !p.empty()) entry.partition_name = p;
    if (!g.host_pool.empty()) entry.host_pool = g.host_pool;
    if (g.slurm) entry.slurm_config = g.slurm->to_api();
    if (g.scheduled_update) entry.scheduled_update_config = g.scheduled_update->to_json();
    if (current != g.instance_count) entry.active_operations = json{{"Scaling", 1}};
    if (g.warm_spares > 0) {
      entry.warm_spares = g.warm_spares;
      int ready = 0;
      for (const auto& i : instances)
        ready += i.group == g.name && i.status == NodeStatus::kWarmSpare;
      entry.current_warm_spares = ready;
    }
    reply.instance_groups.push_back(std::move(entry));
  }
  reply.cluster_arn = cluster->arn;
  reply.cluster_id = cluster->id;
  reply.cluster_name = cluster->name;
  reply.cluster_status = name(cluster->status);
  reply.creation_time = ids::iso_time(cluster->created_at);
  if (!cluster->failure_message.empty()) reply.failure_message = cluster->failure_message;
  reply.node_recovery = spec->node_recovery;
  if (spec->tiered_storage) reply.tiered_storage_config = spec->tiered_storage->to_api();
  if (spec->orchestrator) reply.orchestrator = spec->orchestrator->to_api();
  if (spec->continuous) reply.node_provisioning_mode = "Continuous";
  reply.slurm_controller_node = layout.controller_node;
  reply.slurmctld_port = layout.slurmctld_port;
  reply.shared_folder = (config_.clusters_dir() / cluster->id / "fsx").string();
  return reply.to_json();
}

Result<json> ClusterService::list_clusters(const json&) {
  api::ListClustersReply reply;
  for (const auto& c : store_.clusters()) {
    reply.cluster_summaries.push_back(
        {c.arn, c.id, c.name, name(c.status), ids::iso_time(c.created_at)});
  }
  return reply.to_json();
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
    if (row.status != ClusterStatus::kInService && row.status != ClusterStatus::kUpdating) {
      return make_error(api::kConflictException, "ClusterName: cluster " + row.name + " is " +
                                                     name(row.status) +
                                                     "; it can be updated when InService");
    }
    row.spec = updated->to_json();
    row.status = ClusterStatus::kUpdating;
    row.updated_at = ids::now_seconds();
    std::string counts;
    for (const auto& g : updated->groups) {
      counts += (counts.empty() ? "" : ", ") + g.name + "=" + std::to_string(g.instance_count);
    }
    if (updated->tiered_storage != current->tiered_storage) {
      std::string tier = spec::memory_store_setting(updated->tiered_storage);
      counts += "; TieredStorageConfig " + (tier.empty() ? std::string("Disable") : tier);
    }
    if (updated->continuous != current->continuous) counts += "; NodeProvisioningMode Continuous";
    if (updated->orchestrator != current->orchestrator) {
      counts += std::string("; SlurmConfigStrategy ") +
                name(spec::slurm_config_strategy(updated->orchestrator));
    }
    auto ev = store_.append_event(
        {0, row.id, 0, "Cluster", "", "", "", "ClusterUpdating", "UpdateCluster: " + counts});
    return ev ? Status{} : Status(ev.error());
  });
  if (!changed) return changed.error();
  wake_();
  return api::UpdateClusterReply{cluster->arn}.to_json();
}

Result<json> ClusterService::delete_cluster(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  Status changed = store_.mutate_cluster(cluster->id, [&](store::ClusterRow& row) -> Status {
    if (row.status == ClusterStatus::kDeleting) return {};
    row.status = ClusterStatus::kDeleting;
    auto ev = store_.append_event(
        {0, row.id, 0, "Cluster", "", "", "", "ClusterDeleting", "DeleteCluster accepted"});
    return ev ? Status{} : Status(ev.error());
  });
  if (!changed) return changed.error();
  wake_();
  return api::DeleteClusterReply{cluster->arn}.to_json();
}

Result<json> ClusterService::list_cluster_events(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  // Read by hand, not through ListClusterEventsRequest: a MaxResults that is not an integer
  // is "must be an integer from 1 to 10000" here, and the fields are checked in this order.
  long long after = 0;
  int limit = 1000;
  std::string node;
  if (request.contains(api::field::kAfterEventId)) {
    const json& v = request[api::field::kAfterEventId];
    if (!v.is_number_integer()) return invalid("AfterEventId: must be an integer");
    after = v.get<long long>();
  }
  if (request.contains(api::field::kMaxResults)) {
    const json& v = request[api::field::kMaxResults];
    // Compared as 64 bits: 4294967297 read as an int would wrap to 1 and pass.
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 10000) {
      return invalid("MaxResults: must be an integer from 1 to 10000");
    }
    limit = static_cast<int>(v.get<long long>());
  }
  if (request.contains(api::field::kNodeName)) {
    const json& v = request[api::field::kNodeName];
    if (!v.is_string()) return invalid("NodeName: must be a string");
    node = v.get<std::string>();
  }
  api::ListClusterEventsReply reply;
  for (const auto& e : store_.events(cluster->id, after, limit, node)) {
    reply.events.push_back(event_entry(*cluster, e));
  }
  return reply.to_json();
}

Result<json> ClusterService::describe_cluster_event(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  if (!request.contains(api::field::kEventId) ||
      !request[api::field::kEventId].is_number_integer()) {
    return invalid("EventId: is required, an integer");
  }
  long long id = request[api::field::kEventId].get<long long>();
  auto e = store_.event(cluster->id, id);
  if (!e) {
    return make_error(api::kResourceNotFound,
                      "EventId: cluster " + cluster->name + " has no event " + std::to_string(id));
  }
  return api::DescribeClusterEventReply{event_entry(*cluster, *e)}.to_json();
}

}  // namespace endure::controller
