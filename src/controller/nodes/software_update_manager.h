// UpdateClusterSoftware: every node of the chosen groups gets fresh software, what a new
// root volume is on the cloud service: it is reimaged (provider::NodeProvider::reimage) and
// runs its OnCreate again. Nodes go in rolling batches; a worker is drained first and waits
// for its jobs to end, so an update never kills a training job. The node reads
// SystemUpdating meanwhile, the cluster too until every node is done; a node whose OnCreate
// fails on the new software is replaced.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/slurm/slurm_in_node.h"
#include "provider/node_provider.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

class SoftwareUpdateManager {
 public:
  SoftwareUpdateManager(store::Store& store, provider::NodeProvider& provider, const Config& config,
                        HealthMonitor& health)
      : store_(store), provider_(provider), config_(config), health_(health) {}

  // {ClusterName, InstanceGroups?, DeploymentConfig?} -> {ClusterArn}. The cluster must be
  // InService; it is SystemUpdating when this returns.
  Result<json> start(const json& request);

  // A group's ScheduledUpdateConfig come due (controller/nodes/scheduled_updates.cpp): on
  // an InService cluster with no update under way, starts the group's update as
  // UpdateClusterSoftware would, with its DeploymentConfig, and records the run. A schedule
  // that comes due while the cluster is busy runs once it is InService again. True when an
  // update started.
  bool start_scheduled(const store::ClusterRow& cluster, const spec::ClusterSpec& spec);

  // One pass over a SystemUpdating cluster: moves its nodes along, starts the next batch,
  // and closes the update when every node is done. True when the next pass should come soon.
  bool reconcile(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                 const SlurmView& slurm);

 private:
  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
};

}  // namespace endure::controller
