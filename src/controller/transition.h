// The one way endured changes an instance's or a cluster's state: the row and its events in
// one SQLite transaction (store::Store::transition, transition_cluster), then logged. A failure is
// logged and returned; a reconcile pass that gets one leaves the state as it was and tries again
// next pass.
#pragma once

#include "common/log.h"
#include "store/store.h"

namespace endure::controller {

inline Status transition(store::Store& store, const store::InstanceRow& row,
                         const store::Store::InstanceEvents& events,
                         const std::function<void(store::InstanceRow&)>& change) {
  Status s = store.transition(row.instance_id, change, events);
  if (!s) {
    log::error("{} {}: {}", row.node_name, row.instance_id, s.error().message);
    return s;
  }
  for (const auto& [type, text] : events) {
    log::info("{} {}: {}: {}", row.node_name, row.instance_id, type, text);
  }
  return s;
}

// The same for a cluster's state and its event.
inline Status transition(store::Store& store, const store::ClusterRow& cluster,
                         const std::function<void(store::ClusterRow&)>& change,
                         const std::string& type, const std::string& description) {
  Status s = store.transition_cluster(cluster.id, change, type, description);
  if (!s) {
    log::error("{}: {}: {}", cluster.name, type, s.error().message);
    return s;
  }
  log::info("{}: {}: {}", cluster.name, type, description);
  return s;
}

}  // namespace endure::controller
