#include "controller/nodes/into_service.h"

#include <algorithm>

#include "common/crash_point.h"
#include "common/log.h"
#include "controller/core/node_transitions.h"
#include "controller/core/transition.h"

namespace endure::controller {

PendingObservation observe_pending(const std::vector<store::InstanceRow>& rows,
                                   const spec::ClusterLayout& layout, const spec::NodeSlot& slot,
                                   const store::InstanceRow& row, const SlurmView& slurm,
                                   double now) {
  PendingObservation seen;
  seen.now = now;
  for (const auto& r : rows) {
    if (r.node_name == layout.controller_node && r.status == NodeStatus::kRunning) {
      seen.controller_running = true;
    }
  }
  seen.role = slot.role;
  seen.spare = slot.spare;
  auto it = slurm.nodes.find(row.node_name);
  seen.slurm_node = it == slurm.nodes.end() ? std::nullopt : std::optional(it->second);
  // Asked only where it decides something: it runs scontrol in the controller node.
  seen.controller_up = slot.role == spec::NodeRole::kController &&
                       row.lifecycle_status == LifecycleStatus::kSucceeded && slurm.client &&
                       slurm.client->controller_up();
  return seen;
}

Status enter_service(store::Store& store, provider::NodeProvider& provider,
                     const store::InstanceRow& row, bool spare, const PendingDecision& d,
                     SlurmView& slurm, double now) {
  if (d.resume_in_slurm && slurm.client) {
    if (auto s = slurm.client->resume(row.node_name); !s) {
      log::warn("{}: {}", row.node_name, s.error().message);
      return s;
    }
    // The rest of this pass judges the node by this look at Slurm: resumed, not drained.
    if (auto n = slurm.nodes.find(row.node_name); n != slurm.nodes.end()) {
      std::erase(n->second.flags, "DRAIN");
    }
    // Slurm takes a resumed node as not responding until it registers again.
    register_slurmd_now(provider, row.cluster_id, row.instance_id, row.node_name);
  }
  crash_point("running.before_record");
  if (d.event == "NodeReturnedToService") crash_point("recovery.before_return");
  return apply(store, row, return_to_service(spare, d.event, d.text, now));
}

}  // namespace endure::controller
