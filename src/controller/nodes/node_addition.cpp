#include "controller/nodes/node_addition.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/messages.h"
#include "api/wire.h"
#include "common/ids.h"
#include "controller/core/lookup.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/nodes/logical_ids.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"

namespace endure::controller {
namespace {

namespace F = api::field;
using api::BatchAddClusterNodesError;
using api::BatchAddClusterNodesRequest;

// The request's rules beyond its types: counts, the token's form, fields it does not know.
Status check_request(const json& request, const BatchAddClusterNodesRequest& typed) {
  std::vector<spec::FieldError> errors;
  spec::check_known_keys(request, "", spec::keys_of<BatchAddClusterNodesRequest>(), errors);
  if (typed.client_token) {
    const std::string& token = *typed.client_token;
    bool printable =
        std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (token.empty() || token.size() > size_t{api::kMaxClientTokenLength} || !printable) {
      errors.push_back({F::kClientToken, "must be 1 to 64 printable characters without spaces"});
    }
  }
  const auto& entries = typed.nodes_to_add;
  if (entries.empty() || entries.size() > size_t{api::kMaxAddSpecifications}) {
    errors.push_back({F::kNodesToAdd, "must list 1 to 5 instance groups"});
  }
  int total = 0;
  std::set<std::string> groups;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string path = std::string(F::kNodesToAdd) + "[" + std::to_string(i) + "]";
    spec::check_known_keys(request[F::kNodesToAdd][i], path,
                           spec::keys_of<api::AddClusterNodeSpecification>(), errors);
    const int n = entries[i].increment_target_count_by;
    if (n < 1 || n > api::kMaxNodesToAdd) {
      errors.push_back(
          {spec::join_path(path, F::kIncrementTargetCountBy), "must be an integer from 1 to 50"});
    } else {
      total += n;  // an entry out of bounds is reported once, above
    }
    if (!groups.insert(entries[i].instance_group_name).second) {
      errors.push_back({spec::join_path(path, F::kInstanceGroupName),
                        "names " + entries[i].instance_group_name + " again; one entry a group"});
    }
  }
  if (total > api::kMaxNodesToAdd) {
    errors.push_back({F::kNodesToAdd,
                      "must add at most 50 nodes in all (asks for " + std::to_string(total) + ")"});
  }
  if (errors.empty()) return {};
  return invalid(spec::describe(errors));
}

// Why a group cannot take its nodes, as the cloud's error codes; nullopt when it can.
std::optional<BatchAddClusterNodesError> refusal(const store::ClusterRow& cluster,
                                                 const spec::ClusterModel& model,
                                                 const api::AddClusterNodeSpecification& entry) {
  const std::string& group_name = entry.instance_group_name;
  const int n = entry.increment_target_count_by;
  const spec::InstanceGroupSpec* group = model.spec.find_group(group_name);
  if (!group) {
    return BatchAddClusterNodesError{
        group_name, "InstanceGroupNotFound", n,
        "cluster " + cluster.name + " has no instance group " + group_name};
  }
  if (cluster.status != ClusterStatus::kInService && cluster.status != ClusterStatus::kUpdating) {
    return BatchAddClusterNodesError{group_name, "InvalidInstanceGroupStatus", n,
                                     "cluster " + cluster.name + " is " + name(cluster.status) +
                                         "; nodes can be added when it is InService or Updating"};
  }
  if (model.params.role_of(group_name) == spec::NodeRole::kController) {
    return BatchAddClusterNodesError{
        group_name, "InvalidInstanceGroupStatus", n,
        group_name + " is the controller group: it has exactly 1 instance, which runs slurmctld"};
  }
  if (group->instance_count + group->warm_spares + n > spec::kMaxInstancesPerGroup) {
    return BatchAddClusterNodesError{
        group_name, "InvalidInstanceGroupStatus", n,
        group_name + " would have " + std::to_string(group->instance_count + n) +
            " instances; a group holds at most 64 with its warm spares"};
  }
  if (entry.availability_zones && !entry.availability_zones->empty()) {
    return BatchAddClusterNodesError{group_name, "IncompatibleAvailabilityZones", n,
                                     "endure's nodes have no availability zones"};
  }
  if (entry.instance_types && (entry.instance_types->size() != 1 ||
                               entry.instance_types->front() != group->instance_type)) {
    return BatchAddClusterNodesError{group_name, "IncompatibleInstanceTypes", n,
                                     group_name + " runs " + group->instance_type +
                                         " only; InstanceTypes must be [" + group->instance_type +
                                         "] or absent"};
  }
  return std::nullopt;
}

// The reply for nodes added (by this call or by the one its ClientToken repeats), with each
// node's status now: Pending until an instance runs in its slot.
json reply_for(store::Store& store, const store::ClusterRow& cluster, const json& added,
               const json& failed) {
  std::map<std::string, std::string> status_of;  // logical id -> status
  for (const auto& r : store.instances(cluster.id, true)) {
    if (auto id = logical_id_of(cluster, r)) status_of[*id] = name(r.status);
  }
  api::BatchAddClusterNodesReply reply;
  for (const auto& a : added) {
    std::string id = a.value(F::kNodeLogicalId, "");
    auto it = status_of.find(id);
    reply.successful.push_back(
        {id, a.value(F::kInstanceGroupName, ""), it == status_of.end() ? "Pending" : it->second});
  }
  for (const auto& f : failed) {
    auto error = BatchAddClusterNodesError::from_json(f);
    if (error) reply.failed.push_back(*error);
  }
  return reply.to_json();
}

}  // namespace

Result<json> batch_add_nodes(store::Store& store, const json& request) {
  auto cluster = find_cluster(store, request);
  if (!cluster) return cluster.error();
  auto typed = BatchAddClusterNodesRequest::from_json(request);
  if (!typed) return typed.error();
  if (auto s = check_request(request, *typed); !s) return s.error();
  const json asked = request[F::kNodesToAdd];
  const std::string token = typed->client_token.value_or("");
  const double now = ids::now_seconds();

  // The same call again: nothing added twice, the same ids answered.
  if (!token.empty()) {
    auto seen = cluster->client_tokens.find(token);
    if (seen != cluster->client_tokens.end() &&
        now - seen->value("Time", 0.0) < api::kClientTokenSeconds) {
      if ((*seen)["Request"] != asked) {
        return invalid(
            "ClientToken: was used in the last 8 hours for BatchAddClusterNodes with "
            "other NodesToAdd; use a new token for a new request");
      }
      return reply_for(store, *cluster, (*seen)["Added"], (*seen)["Failed"]);
    }
  }

  auto model = load_model(store, *cluster);
  if (!model) return model.error();
  spec::ClusterSpec spec = model->spec;
  json failed = json::array();
  std::map<std::string, int> grown;  // group -> nodes added
  for (const auto& entry : typed->nodes_to_add) {
    if (auto refused = refusal(*cluster, *model, entry)) {
      failed.push_back(refused->to_json());
      continue;
    }
    grown[entry.instance_group_name] = entry.increment_target_count_by;
    for (auto& g : spec.groups) {
      if (g.name == entry.instance_group_name) g.instance_count += entry.increment_target_count_by;
    }
  }
  // The new slots, by the layout the grown spec makes; each gets a new id even where an
  // old id of a removed slot lingers.
  const spec::ClusterLayout after =
      spec::make_layout(spec, model->params, cluster->index, cluster->removed_slots);
  std::set<std::string> before_names;
  for (const auto& n : model->layout.nodes) before_names.insert(n.node_name);
  json added = json::array();
  json ids = cluster->logical_ids;
  std::string list;
  for (const auto& n : after.nodes) {
    if (before_names.count(n.node_name) || !grown.count(n.group)) continue;
    ids[n.node_name] = new_logical_id(n.node_name);
    added.push_back({{F::kNodeLogicalId, ids[n.node_name]}, {F::kInstanceGroupName, n.group}});
    list += (list.empty() ? "" : ", ") + n.node_name;
  }
  if (!token.empty() || !added.empty()) {
    Status s = store.transaction([&]() -> Status {
      auto fresh = store.cluster_by_id(cluster->id);
      if (!fresh || fresh->spec != cluster->spec ||
          fresh->removed_slots != cluster->removed_slots ||
          fresh->client_tokens != cluster->client_tokens) {
        return make_error(api::kConflictException, "ClusterName: cluster " + cluster->name +
                                                       " changed meanwhile; try again");
      }
      auto record = [&](store::ClusterRow& c) {
        // Tokens older than 8 hours are forgotten as new ones come.
        json kept = json::object();
        for (auto& [t, v] : c.client_tokens.items()) {
          if (now - v.value("Time", 0.0) < api::kClientTokenSeconds) kept[t] = v;
        }
        if (!token.empty()) {
          kept[token] = {{"Request", asked}, {"Added", added}, {"Failed", failed}, {"Time", now}};
        }
        c.client_tokens = std::move(kept);
      };
      if (added.empty())
        return store.mutate_cluster(cluster->id, [&](store::ClusterRow& c) -> Status {
          record(c);
          return {};
        });
      return transition(
          store, *fresh,
          [&](store::ClusterRow& c) {
            c.spec = spec.to_json();
            c.logical_ids = logical_ids_for(ids, after);
            c.status = ClusterStatus::kUpdating;
            c.updated_at = now;
            record(c);
          },
          "ClusterUpdating", "BatchAddClusterNodes: " + list);
    });
    if (!s) return s.error();
  }
  auto fresh = store.cluster_by_id(cluster->id);
  return reply_for(store, fresh ? *fresh : *cluster, added, failed);
}

}  // namespace endure::controller
