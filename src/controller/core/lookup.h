// What every API action starts with: the request's required fields, the cluster its
// ClusterName names, the node its NodeId names, and the cluster's stored model. One place,
// so every action gives the same error for the same mistake.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// A required, non-empty string field of a request object.
Result<std::string> required_string(const json& request, const char* field);

// The ARN of a cluster id.
std::string cluster_arn(const std::string& cluster_id);

// The live cluster a request's ClusterName (a name or an ARN) refers to.
Result<store::ClusterRow> find_cluster(store::Store& store, const json& request);

// The live instance a request's NodeId (an InstanceId, a node name or a NodeLogicalId)
// refers to; an InstanceId of a terminated instance is found too.
Result<store::InstanceRow> find_node(store::Store& store, const store::ClusterRow& cluster,
                                     const json& request);

// The live instance an id names (an InstanceId, a node name or a NodeLogicalId), among rows.
const store::InstanceRow* live_node_named(const store::ClusterRow& cluster,
                                          const std::vector<store::InstanceRow>& rows,
                                          const std::string& id);

// A node's NodeLogicalId (controller/nodes/logical_ids.h) as ListClusterNodes and
// DescribeClusterNode show it: the one its instance was launched with, else (an instance
// from before ids, or a spare swapped in) its slot's while it is live.
std::optional<std::string> logical_id_of(const store::ClusterRow& cluster,
                                         const store::InstanceRow& row);

// The cluster's stored spec, provisioning and layout, its nodes on registered hosts placed
// there (the hosts serving its live instances); an InternalFailure when it no longer parses
// (a stored spec was valid when it was accepted).
Result<spec::ClusterModel> load_model(store::Store& store, const store::ClusterRow& cluster);

// Where the cluster's live instances on registered hosts run, by node name.
std::map<std::string, spec::HostPlacement> host_placements(store::Store& store,
                                                           const std::string& cluster_id);

}  // namespace endure::controller
