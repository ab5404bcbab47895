// The one way endured changes a node's or a cluster's state: the row and its events in one
// SQLite transaction (store::Store::transition, transition_cluster), then logged. A node's
// change is checked inside that transaction against its transition table (node_state.h),
// on the row as stored: a change the table does not hold is refused (InvalidTransition) and
// nothing is written. A failure is logged and returned; a reconcile pass that gets one
// leaves the state as it was and tries again next pass.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"
#include "controller/core/node_transitions.h"
#include "store/store.h"

namespace endure::controller {

// Ok when before -> after, written with first_event, is a row of the node table (and of the
// lifecycle table where the lifecycle status moved); else InvalidTransition.
Status check_node_change(const store::InstanceRow& before, const store::InstanceRow& after,
                         const std::string& first_event);

// Makes `change` (node_transitions.h) on the row of `row`'s instance as stored.
Status apply(store::Store& store, const store::InstanceRow& row, const NodeChange& change);

// A new node's row and its InstanceLaunching event, checked as the table's first edge.
Status insert_node(store::Store& store, const store::InstanceRow& row,
                   const std::string& description);

// The same for a cluster's state and its event. A change of status is refused
// (InvalidTransition) when the stored row's status or updated_at is no longer `cluster`'s.
Status transition(store::Store& store, const store::ClusterRow& cluster,
                  const std::function<void(store::ClusterRow&)>& change, const std::string& type,
                  const std::string& description);

}  // namespace endure::controller
