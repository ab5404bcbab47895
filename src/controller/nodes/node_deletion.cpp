#include "controller/nodes/node_deletion.h"

#include <algorithm>

#include "api/wire.h"
#include "common/ids.h"
#include "controller/core/lookup.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "spec/cluster_spec.h"

namespace endure::controller {

Result<json> batch_delete_nodes(store::Store& store, const json& request) {
  auto cluster = find_cluster(store, request);
  if (!cluster) return cluster.error();
  const json ids = request.value("NodeIds", json());
  if (!ids.is_array() || ids.empty() || ids.size() > size_t{api::kMaxBatchDeleteNodes}) {
    return invalid("NodeIds: must be an array of 1 to " +
                   std::to_string(api::kMaxBatchDeleteNodes) + " instance ids");
  }
  for (const auto& id : ids) {
    if (!id.is_string()) return invalid("NodeIds: every entry must be an instance id string");
  }
  auto model = load_model(store, *cluster);
  if (!model) return model.error();
  json successful = json::array(), failed = json::array();
  auto fail = [&](const std::string& id, const char* code, const std::string& message) {
    failed.push_back({{"NodeId", id}, {"Code", code}, {"Message", message}});
  };
  spec::ClusterSpec spec = model->spec;
  json removed = cluster->removed_slots;
  std::vector<std::string> names;
  auto rows = store.instances(cluster->id, true);
  for (const auto& id_json : ids) {
    std::string id = id_json.get<std::string>();
    const store::InstanceRow* row = live_node_named(*cluster, rows, id);
    if (!row) {
      fail(id, "NodeIdNotFound", "no live node or instance " + id + " in cluster " + cluster->name);
      continue;
    }
    if (row->node_name == model->layout.controller_node) {
      fail(id, "InvalidNodeStatus",
           row->node_name + " runs slurmctld and holds Slurm's state: it cannot be deleted");
      continue;
    }
    if (row->recovery.has_value() || row->status == NodeStatus::kSystemUpdating ||
        row->status == NodeStatus::kShuttingDown ||
        row->status == NodeStatus::kDeepHealthCheckInProgress) {
      fail(id, "NodeIdInUse",
           row->node_name + " is " + status_text(row->status, row->recovery) +
               "; delete it once that is done");
      continue;
    }
    if (std::find(names.begin(), names.end(), row->node_name) != names.end()) continue;
    auto group = std::find_if(spec.groups.begin(), spec.groups.end(),
                              [&](const auto& g) { return g.name == row->group; });
    if (group == spec.groups.end() || group->instance_count == 0) {
      fail(id, "InvalidNodeStatus", row->node_name + "'s group has no instance to remove");
      continue;
    }
    group->instance_count -= 1;
    if (!removed.contains(row->group)) removed[row->group] = json::array();
    removed[row->group].push_back(row->slot);
    names.push_back(row->node_name);
    successful.push_back(id);
  }
  if (names.empty()) return json{{"Successful", successful}, {"Failed", failed}};
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  Status s = store.transaction([&]() -> Status {
    auto fresh = store.cluster_by_id(cluster->id);
    if (!fresh ||
        (fresh->status != ClusterStatus::kInService && fresh->status != ClusterStatus::kUpdating)) {
      return make_error(api::kConflictException, "ClusterName: cluster " + cluster->name + " is " +
                                                     (fresh ? name(fresh->status) : "gone") +
                                                     "; its nodes can be deleted when InService");
    }
    if (fresh->spec != cluster->spec || fresh->removed_slots != cluster->removed_slots) {
      return make_error(api::kConflictException,
                        "ClusterName: cluster " + cluster->name + " changed meanwhile; try again");
    }
    return transition(
        store, *fresh,
        [&](store::ClusterRow& c) {
          c.spec = spec.to_json();
          c.removed_slots = removed;
          for (const auto& n : names) c.logical_ids.erase(n);
          c.status = ClusterStatus::kUpdating;
          c.updated_at = ids::now_seconds();
        },
        "ClusterUpdating", "BatchDeleteClusterNodes: " + list);
  });
  if (!s) return s.error();
  return json{{"Successful", successful}, {"Failed", failed}};
}

}  // namespace endure::controller
