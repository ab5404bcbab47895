// BatchAddClusterNodes: more nodes in some of a cluster's groups, each given its
// NodeLogicalId at once (controller/nodes/logical_ids.h), the groups' InstanceCount raised
// in the same transaction as the ids and the request's ClientToken, so that the same call
// made again within 8 hours adds nothing twice and answers the same ids with their status
// now. A group that cannot take its nodes is answered in Failed, the others still grow.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "store/store.h"

namespace endure::controller {

Result<json> batch_add_nodes(store::Store& store, const json& request);

}  // namespace endure::controller
