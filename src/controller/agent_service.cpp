#include "controller/agent_service.h"

#include "api/wire.h"
#include "controller/lookup.h"

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
  if (status != "InProgress" && status != "Succeeded" && status != "Failed") {
    return validation("Status: must be one of InProgress, Succeeded, Failed");
  }
  bool changed = false;
  Status s = store_.mutate_instance(instance_id, [&](store::InstanceRow& r) -> Status {
    // Terminal outcomes stay, until a reboot asks again ("Rebooting").
    if (r.lifecycle_status == "Succeeded" || r.lifecycle_status == "Failed") return {};
    if (r.lifecycle_status == "Rebooting" && status == "InProgress") return {};
    changed = r.lifecycle_status != status;
    bool booting = r.lifecycle_status == "Rebooting";
    r.lifecycle_status = status;
    r.lifecycle_exit = request.value("ExitCode", -1);
    r.lifecycle_tail = request.value("LastLines", "");
    if (!changed || status == "InProgress") return {};
    auto ev = store_.append_event(
        {0, r.cluster_id, 0, "Instance", r.group, r.instance_id, r.node_name,
         booting ? (status == "Succeeded" ? "BootScriptsSucceeded" : "BootScriptsFailed")
                 : (status == "Succeeded" ? "LifecycleSucceeded" : "LifecycleFailed"),
         std::string(booting ? "boot scripts " : "OnCreate ") +
             (status == "Succeeded" ? "succeeded" : "failed") + " with exit code " +
             std::to_string(r.lifecycle_exit)});
    return ev ? Status{} : Status(ev.error());
  });
  if (!s) return s.error();
  if (changed) wake_();
  return json::object();
}

}  // namespace endure::controller
