// Node recovery, the whole story in one place. Each pass:
//
//   judge      every node in service (agent findings, silence confirmed by the provider and
//              Slurm, processes, manual Action: reasons in Slurm): an unhealthy one gets a
//              recovery Requested (or, under NodeRecovery None, is marked Failure)
//   act        Requested -> Drained (a worker set down and drained in Slurm)
//              Drained -> Rebooting (Reboot: the node restarts, Pending again)
//                      -> Terminating (Replace: the instance is destroyed) -> Done; the
//                         launcher fills the slot again under the same hostname
//   watch      Rebooting -> back in service (its boot scripts succeeded and Slurm sees it)
//                        or RebootFailed -> Requested again, as a Replace
//
// Every stage is stored with its event once its effect is done, so a controller killed in
// the middle resumes the same recovery and writes no event twice. The silence confirmer and
// the health monitor only observe; acting is this manager's.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/core/recovery_policy.h"
#include "controller/health/silence_confirmer.h"
#include "controller/slurm/slurm_in_node.h"
#include "provider/node_provider.h"
#include "slurm/slurm_client.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

class RecoveryManager {
 public:
  RecoveryManager(store::Store& store, provider::NodeProvider& provider, const Config& config,
                  HealthMonitor& health);

  // True when it took an action that the next pass should follow up at once.
  // `slurm` is the pass's look at Slurm; a node back in service is resumed in it.
  bool reconcile(const store::ClusterRow& cluster, const spec::ClusterSpec& spec,
                 const spec::ClusterLayout& layout, SlurmView& slurm);

  // Called right after a worker is taken out of Slurm for a fault, with Slurm's jobs as
  // they were just before (auto-resume requeues the jobs whose batch host it was).
  using NodeLostHook = std::function<void(const store::ClusterRow&, const std::string& node,
                                          const std::string& reason, const SlurmView&,
                                          const std::vector<slurm::JobState>& jobs_before)>;
  void set_node_lost_hook(NodeLostHook hook) { node_lost_ = std::move(hook); }

  // Operator requests (BatchRebootClusterNodes / BatchReplaceClusterNodes): marks the
  // instance for recovery, or says why not (InstanceIdNotFound, InvalidInstanceStatus).
  Status request(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                 const std::string& instance_id, RecoveryAction action, const std::string& reason);

 private:
  void judge(const store::ClusterRow& cluster, const spec::ClusterSpec& spec,
             const spec::ClusterLayout& layout, const store::InstanceRow& row,
             const SlurmView& slurm);
  // drained_already: the node was drained in this pass (a reboot that failed at once).
  void act(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
           const store::InstanceRow& row, const SlurmView& slurm, bool drained_already = false);
  // A rebooting node: back in service, or its reboot failed (a Replace). True when it is
  // back (jobs waiting for it are grown back in the next pass).
  bool watch_reboot(const spec::ClusterLayout& layout, const store::InstanceRow& row,
                    const std::vector<store::InstanceRow>& rows, SlurmView& slurm);
  // Takes a worker out of Slurm (down + drain) and stores the stage Drained.
  void drain(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
             const store::InstanceRow& row, const SlurmView& slurm, bool drained_already);
  // True when the reboot could not start and a Replace is requested instead.
  bool reboot(const store::ClusterRow& cluster, const store::InstanceRow& row);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  SilenceConfirmer silence_;
  NodeLostHook node_lost_;
};

}  // namespace endure::controller
