// The API's actions: each validates its request, changes the store in one transaction (or
// not at all) and wakes the reconciler, which does the slow work.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/json.h"
#include "common/result.h"
#include "controller/config.h"
#include "controller/health_monitor.h"
#include "controller/auto_resume_manager.h"
#include "controller/recovery_manager.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

class ClusterService {
 public:
  ClusterService(store::Store& store, provider::NodeProvider& provider, const Config& config,
                 HealthMonitor& health, RecoveryManager& recovery, AutoResumeManager& auto_resume,
                 std::function<void()> wake_reconciler,
                 std::function<long long()> reconcile_passes);

  // An operator action by its API name (api::kCreateCluster, ...).
  Result<json> handle(const std::string& action, const json& request);

  // An agent action; the token must be the join token of instance_id.
  Result<json> handle_agent(const std::string& action, const std::string& instance_id,
                            const std::string& token, const json& request);

  // An auto-resume action (srun's supervisor); the token must be the cluster's auto-resume
  // token unless operator_ok.
  Result<json> handle_auto_resume(const std::string& action, const std::string& token,
                                  bool operator_ok, const json& request);

 private:
  Result<json> create_cluster(const json& request);
  Result<json> describe_cluster(const json& request);
  Result<json> list_clusters(const json& request);
  Result<json> list_cluster_nodes(const json& request);
  Result<json> describe_cluster_node(const json& request);
  Result<json> update_cluster(const json& request);
  Result<json> delete_cluster(const json& request);
  Result<json> list_cluster_events(const json& request);
  Result<json> get_cluster_node_log(const json& request);
  Result<json> get_node_exec_target(const json& request);
  Result<json> batch_recover(const json& request, RecoveryAction action);
  Result<json> inject_fault(const json& request);
  Result<json> start_health_check(const json& request);

  // The cluster a request's ClusterName (a name or an ARN) refers to.
  Result<store::ClusterRow> find_cluster(const json& request);
  // The live instance a request's NodeId (an InstanceId or a node name) refers to; an
  // InstanceId of a terminated instance is found too.
  Result<store::InstanceRow> find_node(const store::ClusterRow& cluster, const json& request);
  // Lifecycle sources are checked and provisioning parameters read before anything changes.
  Result<json> load_provisioning(const json& spec_json);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  RecoveryManager& recovery_;
  AutoResumeManager& auto_resume_;
  std::function<void()> wake_;
  std::function<long long()> reconcile_passes_;
};

// The ARN of a cluster id.
std::string cluster_arn(const std::string& cluster_id);

}  // namespace endure::controller
