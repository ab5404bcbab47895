// A Pending node on its way into service, as one reconcile pass sees and moves it: what it
// observes of the node (its role, Slurm's record, whether slurmctld answers), and the
// node's entry into service once decide_pending says so. Shared by the launch of a new
// node (the reconciler) and the end of a reboot (the recovery manager).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "controller/core/node_decisions.h"
#include "controller/slurm/slurm_in_node.h"
#include "provider/node_provider.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// What decide_pending needs of `row` in slot `slot`, at `now`. `rows`: the cluster's live
// rows (is the controller node Running?). slurmctld is asked only for the controller node.
PendingObservation observe_pending(const std::vector<store::InstanceRow>& rows,
                                   const spec::ClusterLayout& layout, const spec::NodeSlot& slot,
                                   const store::InstanceRow& row, const SlurmView& slurm,
                                   double now);

// kRun's effect: the node resumed in Slurm where endured (or an Action:) drained it and made
// to register at once, then recorded in service (return_to_service) with its event. An
// error is logged and returned; the node stays Pending for the next pass. The rest of the
// pass sees it resumed in `slurm`.
Status enter_service(store::Store& store, provider::NodeProvider& provider,
                     const store::InstanceRow& row, bool spare, const PendingDecision& d,
                     SlurmView& slurm, double now);

}  // namespace endure::controller
