// The cluster memory tier kept equal to the spec on running nodes: when UpdateCluster
// changes TieredStorageConfig, every running node's memory_store.json is rewritten (or
// removed, with Disable), and the setting is recorded on the cluster as applied. A node
// launched later gets the file from the spec at its launch (node_bootstrap.h).
#pragma once

#include "provider/node_provider.h"
#include "spec/cluster_spec.h"
#include "store/store.h"

namespace endure::controller {

// Does nothing when the cluster's applied setting already matches the spec's; tried again
// next pass while a launched node is coming back (Pending, not running) or cannot be
// written.
void push_memory_store_config(store::Store& store, provider::NodeProvider& provider,
                              const store::ClusterRow& cluster, const spec::ClusterSpec& spec);

}  // namespace endure::controller
