#include "controller/core/lookup.h"

#include <algorithm>

#include "api/wire.h"
#include "controller/core/node_state.h"
#include "provider/host/host_inventory.h"

namespace endure::controller {

Result<std::string> required_string(const json& request, const char* field) {
  if (!request.is_object()) return invalid("request: must be a JSON object");
  if (!request.contains(field)) return invalid(std::string(field) + ": is required");
  if (!request[field].is_string() || request[field].get<std::string>().empty()) {
    return invalid(std::string(field) + ": must be a non-empty string");
  }
  return request[field].get<std::string>();
}

std::string cluster_arn(const std::string& cluster_id) {
  return "arn:endure:local:cluster/" + cluster_id;
}

Result<store::ClusterRow> find_cluster(store::Store& store, const json& request) {
  auto name = required_string(request, "ClusterName");
  if (!name) return name.error();
  std::string prefix = cluster_arn("");
  if (name->rfind(prefix, 0) == 0) {
    auto row = store.cluster_by_id(name->substr(prefix.size()));
    if (row && row->status != ClusterStatus::kDeleted) return *row;
  } else if (auto row = store.cluster_by_name(*name)) {
    return *row;
  }
  return make_error(api::kResourceNotFound, "ClusterName: no cluster named " + *name);
}

Result<store::InstanceRow> find_node(store::Store& store, const store::ClusterRow& cluster,
                                     const json& request) {
  auto id = required_string(request, "NodeId");
  if (!id) return id.error();
  const auto rows = store.instances(cluster.id, true);
  if (const auto* r = live_node_named(cluster, rows, *id)) return *r;
  if (auto r = store.instance(*id); r && r->cluster_id == cluster.id) return *r;
  return make_error(api::kResourceNotFound,
                    "NodeId: cluster " + cluster.name + " has no node or instance " + *id);
}

const store::InstanceRow* live_node_named(const store::ClusterRow& cluster,
                                          const std::vector<store::InstanceRow>& rows,
                                          const std::string& id) {
  for (const auto& r : rows) {
    if (r.instance_id == id || r.node_name == id || logical_id_of(cluster, r) == id) return &r;
  }
  return nullptr;
}

std::optional<std::string> logical_id_of(const store::ClusterRow& cluster,
                                         const store::InstanceRow& row) {
  if (!row.logical_id.empty()) return row.logical_id;
  if (row.terminated_at > 0) return std::nullopt;
  auto it = cluster.logical_ids.find(row.node_name);
  if (it == cluster.logical_ids.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::map<std::string, spec::HostPlacement> host_placements(store::Store& store,
                                                           const std::string& cluster_id) {
  std::map<std::string, spec::HostPlacement> out;
  auto hosts = store.hosts();
  // Most clusters have no node on a host: their instances need not be read at all.
  if (std::none_of(hosts.begin(), hosts.end(),
                   [&](const store::HostRow& h) { return h.cluster_id == cluster_id; })) {
    return out;
  }
  std::map<std::string, std::string> node_of;  // live instance id -> node name
  for (const auto& r : store.instances(cluster_id, true)) node_of[r.instance_id] = r.node_name;
  for (const auto& h : hosts) {
    auto state = provider::host_state_from(h.state);
    bool serves = state && provider::serves_a_node(*state);
    auto node = node_of.find(h.instance_id);
    if (!serves || h.cluster_id != cluster_id || node == node_of.end()) continue;
    out[node->second] = {h.name, h.registration.value("Address", "")};
  }
  return out;
}

Result<spec::ClusterModel> load_model(store::Store& store, const store::ClusterRow& cluster) {
  auto model = spec::load_cluster_model(cluster.spec, cluster.provisioning, cluster.index,
                                        cluster.removed_slots);
  if (!model) {
    return make_error(api::kInternalFailure, "stored spec of " + cluster.name +
                                                 " no longer parses: " + model.error().message);
  }
  spec::place_on_hosts(model->layout, host_placements(store, cluster.id));
  return model;
}

}  // namespace endure::controller
