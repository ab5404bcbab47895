#include "controller/slurm/slurmctld_watch.h"

#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/slurm/slurm_in_node.h"

namespace endure::controller {

bool restart_dead_slurmctld(store::Store& store, provider::NodeProvider& provider,
                            const store::ClusterRow& cluster, const store::InstanceRow& controller,
                            const slurm::SlurmClient& client) {
  if (cluster.applied_conf_hash.empty()) return false;
  // A controller being launched, rebooted or updated starts slurmctld itself.
  if (controller.status != NodeStatus::kRunning || controller.recovery.has_value()) return false;
  // Only a process that is gone: a slurmctld that is slow to answer is waited for.
  if (client.controller_running()) return false;
  log::warn("{}: slurmctld on {} is not running: starting it again", cluster.name,
            controller.node_name);
  Status started = client.start_controller();
  const std::string text =
      started ? "slurmctld was not running (it exited or crashed): started again; it recovered "
                "Slurm's saved state"
              : "slurmctld was not running (it exited or crashed); starting it again failed: " +
                    started.error().message;
  const std::string type = started ? "SlurmctldRestarted" : "SlurmctldRestartFailed";
  auto ev = store.append_event({0, cluster.id, 0, "Instance", controller.group,
                                controller.instance_id, controller.node_name, type, text});
  (void)log::ok(ev ? Status{} : Status(ev.error()), cluster.name + ": " + type);
  log::info("{}: {}: {}: {}", cluster.name, controller.node_name, type, text);
  if (!started) return false;
  for (const auto& r : store.instances(cluster.id, true)) {
    if (r.node_name == controller.node_name || !provider.running(cluster.id, r.instance_id)) {
      continue;
    }
    register_slurmd_now(provider, cluster.id, r.instance_id, r.node_name);
  }
  return true;
}

}  // namespace endure::controller
