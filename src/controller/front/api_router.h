// Which part answers which action: operator actions go to the clusters' service, the deep
// check workflow, the fault injector and the host pools' service; agent actions to the agent service; srun's
// auto-resume actions, once their token is checked, to the auto-resume manager. The HTTP
// front authenticates the operator and hands every call here.
#pragma once

#include <functional>
#include <string>

#include "common/json.h"
#include "common/result.h"
#include "controller/front/access_keys.h"
#include "controller/front/agent_service.h"
#include "controller/front/cluster_service.h"
#include "controller/front/fault_injector.h"
#include "controller/front/host_service.h"
#include "controller/health/deep_check_manager.h"
#include "controller/jobs/auto_resume_manager.h"
#include "controller/jobs/training_service.h"
#include "controller/nodes/software_update_manager.h"
#include "store/store.h"

namespace endure::controller {

struct ApiParts {
  store::Store& store;
  ClusterService& clusters;
  DeepCheckManager& deep_checks;
  SoftwareUpdateManager& software_updates;
  FaultInjector& faults;
  AgentService& agents;
  AutoResumeManager& auto_resume;
  HostService& hosts;
  TrainingService& training;
  std::function<void()> wake_reconciler;
  std::function<long long()> reconcile_passes;
  AccessKeys* access_keys = nullptr;  // CreateAccessKey, ListAccessKeys, DeleteAccessKey
};

class ApiRouter {
 public:
  explicit ApiRouter(ApiParts parts) : p_(std::move(parts)) {}

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
  ApiParts p_;
};

}  // namespace endure::controller
