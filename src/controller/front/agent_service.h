// The agents' side of the API: each call is authenticated with the node's own join token;
// heartbeats feed the health monitor and carry orders back; lifecycle outcomes and deep
// check results land in the node's row.
#pragma once

#include <functional>
#include <string>

#include "common/json.h"
#include "common/result.h"
#include "controller/core/health_monitor.h"
#include "controller/health/deep_check_manager.h"
#include "controller/metrics/node_gauges.h"
#include "store/store.h"

namespace endure::controller {

// AgentHeartbeat's Findings as the health monitor keeps them ([] when absent), or a
// ValidationException naming the first that is not a Finding ("Findings[0].Kind: ...").
Result<std::vector<api::Finding>> heartbeat_findings(const json& request);

class AgentService {
 public:
  AgentService(store::Store& store, HealthMonitor& health, DeepCheckManager& deep_checks,
               std::function<void()> wake_reconciler)
      : store_(store),
        health_(health),
        deep_checks_(deep_checks),
        wake_(std::move(wake_reconciler)) {}

  // Where each heartbeat's node gauges go (/metrics); none: they are dropped.
  void set_node_gauges(metrics::NodeGauges* gauges) { gauges_ = gauges; }

  // An agent action; the token must be the join token of instance_id.
  Result<json> handle(const std::string& action, const std::string& instance_id,
                      const std::string& token, const json& request);

 private:
  // AgentReportLifecycle: {Status: InProgress|Succeeded|Failed, ExitCode, LastLines}.
  Result<json> report_lifecycle(const std::string& instance_id, const json& request);

  store::Store& store_;
  HealthMonitor& health_;
  DeepCheckManager& deep_checks_;
  std::function<void()> wake_;
  metrics::NodeGauges* gauges_ = nullptr;
};

}  // namespace endure::controller
