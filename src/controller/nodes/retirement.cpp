#include "controller/nodes/retirement.h"

#include "common/crash_point.h"
#include "common/log.h"
#include "controller/core/transition.h"

namespace endure::controller {

Status retire_instance(store::Store& store, provider::NodeProvider& provider, HealthMonitor& health,
                       const store::InstanceRow& row, const Retirement& how) {
  if (!how.set_aside.empty()) {
    log::ok(provider.set_aside(row.cluster_id, row.instance_id, how.set_aside),
            row.node_name + ": set its machine aside");
  }
  Status gone = how.keep_files ? provider.terminate(row.cluster_id, row.instance_id)
                               : provider.destroy(row.cluster_id, row.instance_id);
  if (!gone) {
    log::error("{}: {}", row.instance_id, gone.error().message);
    return gone;
  }
  if (how.crash_point_after_effect) crash_point(how.crash_point_after_effect);
  Status recorded = apply(store, row, how.change);
  // Its agent is gone and endured refuses a terminated instance's token: nothing to watch.
  if (recorded) health.forget(row.instance_id);
  return recorded;
}

}  // namespace endure::controller
