// slurmctld is the one Slurm daemon a node replacement cannot bring back: it runs on the
// controller node and holds Slurm's state. When it exits or crashes (Slurm 22.05.8 can
// segfault answering srun's allocation query for a job requeued onto a replaced node),
// endured starts it again at once, as a service manager would, and says so in the events.
#pragma once

#include "provider/node_provider.h"
#include "slurm/slurm_client.h"
#include "store/store.h"

namespace endure::controller {

// Called once per reconcile pass, before Slurm is asked anything: a dead slurmctld makes
// every query wait out MessageTimeout. Does something only when the cluster's slurm.conf
// was applied once (slurmctld ran), the controller node is in service, and slurmctld's
// process is gone: then it starts slurmctld, which recovers Slurm's saved state, has every
// running node's slurmd register at once (a step waiting for a node that slurmctld does
// not know to be up backs off for a minute), and records SlurmctldRestarted (or
// SlurmctldRestartFailed) on the controller node. Returns whether it started slurmctld.
bool restart_dead_slurmctld(store::Store& store, provider::NodeProvider& provider,
                            const store::ClusterRow& cluster, const store::InstanceRow& controller,
                            const slurm::SlurmClient& client);

}  // namespace endure::controller
