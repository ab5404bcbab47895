// Slurm's view of the node set kept equal to the layout: slurm.conf and the hosts file
// written into every running node, then slurmctld reconfigured (or restarted when the node
// set changed), and the applied version recorded on the cluster. A new cluster whose nodes
// all hold the files they were launched with is recorded as applied without a reconfigure.
// A slurm.conf edited by hand on the controller since endured wrote it (its seal broken,
// slurm/conf_edits.h) is met as the cluster's SlurmConfigStrategy says: Managed leaves it
// and applies nothing (a SlurmConfigEdited event says why, once per edit while endured
// runs), Overwrite replaces it, Merge keeps the partitions the edit added; each with an
// event.
#pragma once

#include "api/states.h"
#include "provider/node_provider.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// The hash of the files that make the layout's Slurm configuration.
std::string slurm_files_hash(const spec::ClusterLayout& layout);

// Does nothing when the cluster's applied hash already matches; tried again next pass
// when a node cannot be written or slurmctld refuses.
void push_slurm_conf(store::Store& store, provider::NodeProvider& provider,
                     const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                     api::SlurmConfigStrategy strategy);

}  // namespace endure::controller
