#include "controller/agent_service.h"

#include "api/wire.h"
#include "controller/lookup.h"
#include "controller/node_decisions.h"
#include "controller/transition.h"

namespace endure::controller {

Result<json> AgentService::handle(const std::string& action, const std::string& instance_id,
                                  const std::string& token, const json& request) {
  if (!request.is_object()) return validation("request: must be a JSON object");
  auto row = store_.instance(instance_id);
  // One answer for "no such instance" and "wrong token": a node learns nothing of others.
  if (!row || row->agent_token != token || row->terminated_at > 0) {
    return make_error(api::kUnauthorized, "not a valid join token for " + instance_id);
  }
  if (request.value("InstanceId", instance_id) != instance_id) {
    return make_error(api::kUnauthorized, "a node may report only for itself");
  }
  if (action == api::kAgentHeartbeat) {
    health_.heartbeat(instance_id, request.value("Findings", json::array()));
    // The reply carries orders: a deep health check to run while one is open for it.
    json reply = json::object();
    if (json order = DeepCheckManager::order_for(*row); !order.is_null()) {
      reply["DeepHealthCheck"] = order;
    }
    return reply;
  }
  if (action == api::kAgentReportDeepHealthCheck) {
    auto recorded = deep_checks_.record_results(instance_id, request);
    if (recorded) wake_();  // the check may close now
    return recorded;
  }
  if (action != api::kAgentReportLifecycle) {
    return make_error("UnknownOperation", "no agent action named " + action);
  }
  health_.heartbeat(instance_id, json::array());
  return report_lifecycle(instance_id, request);
}

Result<json> AgentService::report_lifecycle(const std::string& instance_id, const json& request) {
  std::string status = request.value("Status", "");
  auto reported = parse_lifecycle_status(status);
  if (status != "InProgress" && status != "Succeeded" && status != "Failed") {
    return validation("Status: must be one of InProgress, Succeeded, Failed");
  }
  auto row = store_.instance(instance_id);
  if (!row) return make_error(api::kUnauthorized, "not a valid join token for " + instance_id);
  auto current = parse_lifecycle_status(row->lifecycle_status);
  if (!current)
    return make_error(api::kInternalFailure, "stored lifecycle " + row->lifecycle_status);
  int exit_code = request.value("ExitCode", -1);
  auto change = decide_lifecycle_report(*current, *reported, exit_code);
  if (!change) return json::object();
  store::Store::InstanceEvents events;
  if (!change->event.empty()) events.push_back({change->event, change->description});
  // Checked against the stored row inside the transaction: a reboot that raced this report
  // makes it InvalidTransition, and the agent reports again.
  Status s = transition(store_, *row, events, [&](store::InstanceRow& r) {
    r.lifecycle_status = name(change->to);
    r.lifecycle_exit = exit_code;
    r.lifecycle_tail = request.value("LastLines", "");
  });
  if (!s) return s.error();
  if (change->changed) wake_();
  return json::object();
}

}  // namespace endure::controller
