// Warm spares (a group's WarmSpares): nodes launched into the layout's spare slots
// (spec/layout.h) like any other, kept WarmSpare once their OnCreate succeeded and Slurm sees
// them, in no partition. A replaced worker's empty slot takes a ready spare of its group
// instead of a new instance: the spare is renamed to the worker's Slurm name (new InstanceId,
// same NodeName) and its slurmd restarted under it, and the spare's own slot is filled again
// in the background, as any empty slot is. A spare that goes unhealthy or silent is lost:
// destroyed, its machine set aside, and its slot filled again.
#pragma once

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "provider/node_provider.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

class WarmSpares {
 public:
  WarmSpares(store::Store& store, provider::NodeProvider& provider, const Config& config,
             HealthMonitor& health)
      : store_(store), provider_(provider), config_(config), health_(health) {}

  // Swaps a ready spare of slot's group into the slot `replaced` left: true when one took
  // it (the slot needs no new instance). The effect comes first and is idempotent, then the
  // row changes with its event: a controller killed between them swaps the same spare again.
  // On a host, slurmctld is told the node's new address first, so that Slurm reaches it as
  // soon as its slurmd registers under the name.
  bool swap_in(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
               const spec::NodeSlot& slot, const store::InstanceRow& replaced);

  // Destroys every spare that went unhealthy or silent.
  void watch(const store::ClusterRow& cluster);

 private:
  void lose(const store::InstanceRow& spare, const std::string& reason);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
};

}  // namespace endure::controller
