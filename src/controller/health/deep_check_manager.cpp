#include "controller/health/deep_check_manager.h"

#include <algorithm>
#include <set>

#include "api/messages.h"
#include "api/wire.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/lookup.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/slurm/slurm_in_node.h"
#include "slurm/slurm_client.h"

namespace endure::controller {

DeepCheckManager::DeepCheckManager(store::Store& store, provider::NodeProvider& provider,
                                   const Config& config, HealthMonitor& health)
    : store_(store), provider_(provider), config_(config), health_(health) {}

Result<json> DeepCheckManager::start(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  if (cluster->status != ClusterStatus::kInService) {
    return make_error(api::kConflictException,
                      "ClusterName: " + cluster->name + " is " + name(cluster->status) +
                          "; deep health checks run on an InService cluster");
  }
  auto model = load_model(store_, *cluster);
  if (!model) return model.error();
  const spec::ClusterLayout& layout = model->layout;
  auto rows = store_.instances(cluster->id, true);
  std::vector<store::InstanceRow> chosen;
  // NodeIds read by hand, not through StartClusterHealthCheckRequest: a NodeIds that is not
  // an array gets the whole rule, and each entry is checked as it is looked up.
  if (request.contains(api::field::kNodeIds)) {
    const json& node_ids = request[api::field::kNodeIds];
    if (!node_ids.is_array() || node_ids.empty() ||
        node_ids.size() > size_t{api::kMaxHealthCheckNodes}) {
      return invalid("NodeIds: must be an array of 1 to " +
                     std::to_string(api::kMaxHealthCheckNodes) + " node names or instance ids");
    }
    for (size_t i = 0; i < node_ids.size(); ++i) {
      const auto& id = node_ids[i];
      std::string field = "NodeIds[" + std::to_string(i) + "]";
      if (!id.is_string()) return invalid(field + ": must be a string");
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
  if (chosen.empty()) return invalid("NodeIds: the cluster has no worker node to check");
  std::vector<std::string> names;
  for (const auto& r : chosen) {
    const auto* slot = layout.find(r.node_name);
    if (!slot || slot->role != spec::NodeRole::kWorker) {
      return invalid("NodeIds: " + r.node_name + " is not a worker node");
    }
    if (r.status != NodeStatus::kRunning || r.recovery.has_value()) {
      return make_error(api::kConflictException,
                        "NodeIds: " + r.node_name + " is " + name(r.status) + ", not Running");
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
  slurm::SlurmClient client = slurm_in_node(provider_, cluster->id, controller->instance_id);
  if (auto s = client.create_maintenance_reservation(reservation, names); !s) return s.error();
  api::StartClusterHealthCheckReply reply{check_id, reservation, {}};
  // Every node's order and event at once: a check starts on all its nodes or on none.
  Status started = store_.transaction([&]() -> Status {
    for (size_t i = 0; i < chosen.size(); ++i) {
      // Each node sends to the next one in a ring: every link is measured once.
      const auto* peer =
          chosen.size() > 1 ? layout.find(chosen[(i + 1) % chosen.size()].node_name) : nullptr;
      const auto* self = layout.find(chosen[i].node_name);
      // Kept in the row as the heartbeat reply's DeepHealthCheck, written by its type.
      api::DeepCheckOrder order{.id = check_id,
                                .reservation = reservation,
                                .address = self->address,
                                .port = api::kDeepCheckNetworkPort,
                                .started = ids::now_seconds(),
                                .peer = peer ? std::optional(peer->address) : std::nullopt};
      auto text = check_id + (peer ? ": network test to " + peer->node_name : "");
      Status s = apply(store_, chosen[i], start_deep_check(check_id, order.to_json(), text));
      if (!s) return s;
      reply.nodes.push_back(chosen[i].node_name);
    }
    return {};
  });
  if (!started) {
    log::ok(client.delete_reservation(reservation), cluster->name + ": " + reservation);
    return started.error();
  }
  return reply.to_json();
}

json DeepCheckManager::order_for(const store::InstanceRow& row) {
  if (row.status == NodeStatus::kDeepHealthCheckInProgress && row.deep_check.is_object())
    return row.deep_check;
  return nullptr;
}

Result<json> deep_check_results(const json& request) {
  auto it = request.find(api::field::kResults);
  if (it == request.end() || !it->is_array()) return invalid("Results: must be an array");
  std::vector<api::DeepCheckResult> results;
  if (auto error = api::codec::decode(*it, api::field::kResults, results)) return invalid(*error);
  return api::codec::encode(results);
}

Result<json> DeepCheckManager::record_results(const std::string& instance_id, const json& request) {
  std::string id = request.value("Id", "");
  auto results = deep_check_results(request);
  if (!results) return results.error();
  Status s = store_.mutate_instance(instance_id, [&](store::InstanceRow& r) -> Status {
    if (!r.deep_check.is_object() || r.deep_check.value("Id", "") != id) {
      return make_error(api::kConflictException, "no deep health check " + id + " is open");
    }
    r.deep_result = *results;
    return {};
  });
  if (!s) return s.error();
  return json::object();
}

void DeepCheckManager::reconcile(const store::ClusterRow& cluster, const SlurmView& slurm) {
  double now = ids::now_seconds();
  auto rows = store_.instances(cluster.id, true);
  auto in_check = [](const store::InstanceRow& r) {
    return r.status == NodeStatus::kDeepHealthCheckInProgress && r.deep_check.is_object();
  };
  auto timed_out = [&](const store::InstanceRow& r) {
    return now - r.deep_check.value("Started", now) > config_.deep_check_timeout_seconds;
  };
  // A check closes only when all its nodes are done: each node's network test server must
  // stay up until its peer has measured the link to it.
  std::set<std::string> open_checks;
  for (const auto& row : rows) {
    if (in_check(row) && !row.deep_result.is_array() && !timed_out(row)) {
      open_checks.insert(row.deep_check.value("Id", ""));
    }
  }
  std::set<std::string> closing_reservations;
  for (const auto& row : rows) {
    if (!in_check(row) || open_checks.count(row.deep_check.value("Id", ""))) continue;
    std::string reservation = row.deep_check.value("Reservation", "");
    DeepCheckOutcome outcome =
        decide_deep_check(row.deep_result, config_.deep_check_timeout_seconds);
    auto close = end_deep_check(outcome.passed, outcome.summary, outcome.failed, now);
    if (!apply(store_, row, close)) continue;  // tried again next pass
    health_.forget(row.instance_id);
    closing_reservations.insert(reservation);
  }
  for (const auto& reservation : closing_reservations) {
    if (!slurm.client) continue;
    if (auto s = slurm.client->delete_reservation(reservation); !s) {
      log::warn("{}: {}", cluster.name, s.error().message);
    }
  }
}

}  // namespace endure::controller
