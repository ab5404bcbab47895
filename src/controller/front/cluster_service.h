// The operator's cluster and node actions: each validates its request, changes the store in
// one transaction (or not at all) and wakes the reconciler, which does the slow work.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "api/messages.h"
#include "common/json.h"
#include "common/result.h"
#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/health/recovery_manager.h"
#include "provider/node_provider.h"
#include "spec/cluster_spec.h"
#include "store/store.h"

namespace endure::controller {

// A group's LifeCycleConfig as DescribeCluster and DescribeClusterNode show it.
api::LifeCycleConfig life_cycle_config(const spec::InstanceGroupSpec& g);

class ClusterService {
 public:
  ClusterService(store::Store& store, provider::NodeProvider& provider, const Config& config,
                 HealthMonitor& health, RecoveryManager& recovery,
                 std::function<void()> wake_reconciler);

  Result<json> create_cluster(const json& request);
  Result<json> describe_cluster(const json& request);
  Result<json> list_clusters(const json& request);
  Result<json> list_cluster_nodes(const json& request);
  Result<json> describe_cluster_node(const json& request);
  Result<json> update_cluster(const json& request);
  Result<json> delete_cluster(const json& request);
  Result<json> list_cluster_events(const json& request);
  Result<json> describe_cluster_event(const json& request);
  Result<json> get_cluster_node_log(const json& request);
  Result<json> get_node_exec_target(const json& request);
  // BatchRebootClusterNodes / BatchReplaceClusterNodes.
  Result<json> batch_recover(const json& request, RecoveryAction action);

 private:
  // Lifecycle sources are checked and provisioning parameters read before anything changes.
  Result<json> load_provisioning(const json& spec_json);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  RecoveryManager& recovery_;
  std::function<void()> wake_;
};

}  // namespace endure::controller
