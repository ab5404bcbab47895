// Deep health checks, the whole workflow in one place: StartClusterHealthCheck puts the
// chosen workers in a Slurm maintenance reservation and orders each a check (delivered in
// its heartbeat's reply); each node reports its results; once every node of a check has
// reported (or run out of time) the check closes, in a reconcile pass: passed nodes go back to
// Running, failed ones to recovery (Replace), and the reservation goes.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/slurm/slurm_in_node.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

// AgentReportDeepHealthCheck's Results as they are stored for the check to close on, or a
// ValidationException naming the first that is not a DeepCheckResult ("Results[0].Passed:
// must be a boolean"): a reconcile pass reads them long after the call was answered.
Result<json> deep_check_results(const json& request);

class DeepCheckManager {
 public:
  DeepCheckManager(store::Store& store, provider::NodeProvider& provider, const Config& config,
                   HealthMonitor& health);

  // StartClusterHealthCheck: {ClusterName, NodeIds?} -> {HealthCheckId, Reservation, Nodes}.
  Result<json> start(const json& request);

  // The order for a node's heartbeat reply: the check it is to run, or null.
  static json order_for(const store::InstanceRow& row);

  // AgentReportDeepHealthCheck: {Id, Results[]} from the node the check was ordered on.
  Result<json> record_results(const std::string& instance_id, const json& request);

  // Closes the checks whose nodes are all done (a reconcile pass).
  void reconcile(const store::ClusterRow& cluster, const SlurmView& slurm);

 private:
  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
};

}  // namespace endure::controller
