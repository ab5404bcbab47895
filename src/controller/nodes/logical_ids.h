// NodeLogicalId: the cloud API's stable id of a node, given when its slot is asked for
// (by BatchAddClusterNodes before it has an instance, else when the slot is first filled)
// and kept through every replacement of its instance, until the slot is removed. endured
// keeps the cluster's ids as {node name: id} on its row (ClusterRow::logical_ids) and
// writes the id on each instance row it launches into the slot.
#pragma once

#include <string>

#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// "<node name>-<8 hex digits>": the cloud's pattern ([a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9],
// at most 128 characters), new every time a slot is asked for.
std::string new_logical_id(const std::string& node_name);

// ids with an id for every node of the layout (those it has kept) and none for a node the
// layout no longer holds.
json logical_ids_for(const json& ids, const spec::ClusterLayout& layout);

// Brings the cluster's ids in line with its layout (a slot added by CreateCluster or
// UpdateCluster, one removed by UpdateCluster); writes only when something changed.
// Returns the ids as stored now.
Result<json> sync_logical_ids(store::Store& store, const store::ClusterRow& cluster,
                              const spec::ClusterLayout& layout);

}  // namespace endure::controller
