// Slurm's view of the node set kept equal to the layout: slurm.conf and the hosts file
// written into every running node, then slurmctld reconfigured (or restarted when the node
// set changed), and the applied version recorded on the cluster. A new cluster whose nodes
// all hold the files they were launched with is recorded as applied without a reconfigure.
#pragma once

#include "provider/node_provider.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// The hash of the files that make the layout's Slurm configuration.
std::string slurm_files_hash(const spec::ClusterLayout& layout);

// Does nothing when the cluster's applied hash already matches; tried again next pass
// when a node cannot be written or slurmctld refuses.
void push_slurm_conf(store::Store& store, provider::NodeProvider& provider,
                     const store::ClusterRow& cluster, const spec::ClusterLayout& layout);

}  // namespace endure::controller
