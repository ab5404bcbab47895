#include "controller/core/transition.h"

#include "common/log.h"
#include "controller/core/node_state.h"

namespace endure::controller {

Status check_node_change(const store::InstanceRow& before, const store::InstanceRow& after,
                         const std::string& first_event) {
  NodeState from{before.status, before.recovery_stage};
  NodeState to{after.status, after.recovery_stage};
  bool lifecycle_changed = before.lifecycle_status != after.lifecycle_status;
  // A lifecycle report moves the lifecycle alone: its event belongs to that table.
  if (!lifecycle_changed || !(from == to)) {
    if (Status s = check_transition(from, to, first_event); !s) return s;
  }
  if (!lifecycle_changed) return {};
  return check_lifecycle_transition(before.lifecycle_status, after.lifecycle_status, first_event);
}

Status apply(store::Store& store, const store::InstanceRow& row, const NodeChange& change) {
  const auto& events = change.events;
  const std::string first_event = events.empty() ? "" : events.front().first;
  Status s = store.transition(
      row.instance_id,
      [&](store::InstanceRow& r) -> Status {
        store::InstanceRow before = r;
        if (change.edit) change.edit(r);
        return check_node_change(before, r, first_event);
      },
      events);
  if (!s) {
    log::error("{} {}: {}: {}", row.node_name, row.instance_id, change.name, s.error().message);
    return s;
  }
  for (const auto& [type, text] : events) {
    log::info("{} {}: {}: {}", row.node_name, row.instance_id, type, text);
  }
  return s;
}

Status insert_node(store::Store& store, const store::InstanceRow& row,
                   const std::string& description) {
  Status s = check_transition(std::nullopt, NodeState{row.status, row.recovery_stage},
                              "InstanceLaunching");
  if (s) {
    s = store.transaction([&]() -> Status {
      if (auto st = store.insert_instance(row); !st) return st;
      auto ev = store.append_event({0, row.cluster_id, 0, "Instance", row.group, row.instance_id,
                                    row.node_name, "InstanceLaunching", description});
      return ev ? Status{} : Status(ev.error());
    });
  }
  if (!s) {
    log::error("{} {}: {}", row.node_name, row.instance_id, s.error().message);
    return s;
  }
  log::info("{} {}: InstanceLaunching: {}", row.node_name, row.instance_id, description);
  return s;
}

Status transition(store::Store& store, const store::ClusterRow& cluster,
                  const std::function<void(store::ClusterRow&)>& change, const std::string& type,
                  const std::string& description) {
  Status s = store.transition_cluster(
      cluster.id,
      [&](store::ClusterRow& stored) -> Status {
        const store::ClusterRow before = stored;
        change(stored);
        // A new status was decided on the row the caller read: an operator's call since then
        // (DeleteCluster, UpdateCluster) stands, and the next pass decides again on it.
        if (stored.status != before.status &&
            (before.status != cluster.status || before.updated_at != cluster.updated_at)) {
          return make_error("InvalidTransition", std::string("changed since it was read (now ") +
                                                     name(before.status) + "): not applied");
        }
        return {};
      },
      type, description);
  if (!s) {
    log::error("{}: {}: {}", cluster.name, type, s.error().message);
    return s;
  }
  log::info("{}: {}: {}", cluster.name, type, description);
  return s;
}

}  // namespace endure::controller
