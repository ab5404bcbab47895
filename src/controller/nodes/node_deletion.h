// BatchDeleteClusterNodes: takes nodes out of the cluster for good. Each node's slot leaves
// the layout (the group's InstanceCount goes down by one, and the slot is kept out so that
// every other node keeps its name, address and port); the reconciler then shuts the
// instance down, removes its files and restarts slurmctld on the smaller node set. The
// Slurm controller node is refused.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "store/store.h"

namespace endure::controller {

// {ClusterName, NodeIds[1..99]} -> {Successful: [ids], Failed: [{NodeId, Code, Message}]};
// Code is NodeIdNotFound, InvalidNodeStatus (the controller node) or NodeIdInUse (a
// recovery or an update is under way on it). The cluster goes Updating until the node set
// is applied.
Result<json> batch_delete_nodes(store::Store& store, const json& request);

}  // namespace endure::controller
