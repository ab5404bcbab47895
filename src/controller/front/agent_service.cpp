#include "controller/front/agent_service.h"

#include "api/messages.h"
#include "api/wire.h"
#include "common/crash_point.h"
#include "controller/core/lookup.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"

namespace endure::controller {
namespace {

// A field of an agent request that endured defaults when absent (the agent messages'
// from_json would require it). Present, it must have the message's type: a
// ValidationException naming it, worded as the types word it, never nlohmann's type_error.
template <class T>
Result<T> defaulted(const json& request, const char* key, T fallback) {
  auto it = request.find(key);
  if (it == request.end()) return fallback;
  T out{};
  if (auto error = api::codec::decode(*it, key, out)) return invalid(*error);
  return out;
}

}  // namespace

Result<std::vector<api::Finding>> heartbeat_findings(const json& request) {
  return defaulted(request, api::field::kFindings, std::vector<api::Finding>{});
}

Result<json> AgentService::handle(const std::string& action, const std::string& instance_id,
                                  const std::string& token, const json& request) {
  if (!request.is_object()) return invalid("request: must be a JSON object");
  auto row = store_.instance(instance_id);
  // One answer for "no such instance" and "wrong token": a node learns nothing of others.
  if (!row || row->agent_token != token || row->terminated_at > 0) {
    return make_error(api::kUnauthorized, "not a valid join token for " + instance_id);
  }
  auto reporter = defaulted(request, api::field::kInstanceId, instance_id);
  if (!reporter) return reporter.error();
  if (*reporter != instance_id) {
    return make_error(api::kUnauthorized, "a node may report only for itself");
  }
  if (action == api::kAgentHeartbeat) {
    // Each a whole Finding, of a kind endured knows: the health monitor judges by them long
    // after this call has been answered.
    auto findings = heartbeat_findings(request);
    if (!findings) return findings.error();
    health_.heartbeat(instance_id, std::move(*findings), row->cluster_id);
    if (gauges_) gauges_->record(instance_id, request.value(api::field::kMetrics, json::object()));
    // The reply carries orders: a deep health check to run while one is open for it.
    api::AgentHeartbeatReply reply;
    if (json order = DeepCheckManager::order_for(*row); !order.is_null()) {
      auto typed = api::DeepCheckOrder::from_json(order);
      if (!typed) {
        return make_error(api::kInternalFailure,
                          "stored deep health check order: " + typed.error().message);
      }
      reply.deep_health_check = std::move(*typed);
    }
    return reply.to_json();
  }
  if (action == api::kAgentReportFindings) {
    auto report = api::AgentReportFindingsRequest::from_json(request);
    if (!report) return report.error();
    // Judged now, not at the next pass: a logged fault is a verdict already.
    if (health_.logged(instance_id, report->findings) > 0) wake_();
    return api::AgentReportFindingsReply{}.to_json();
  }
  if (action == api::kAgentReportDeepHealthCheck) {
    // Checked here so that record_results' own read of Id cannot throw.
    if (auto id = defaulted<std::string>(request, api::field::kId, ""); !id) return id.error();
    auto recorded = deep_checks_.record_results(instance_id, request);
    if (!recorded) return recorded;
    wake_();  // the check may close now
    return api::AgentReportDeepHealthCheckReply{}.to_json();
  }
  if (action != api::kAgentReportLifecycle) {
    return make_error("UnknownOperation", "no agent action named " + action);
  }
  health_.heartbeat(instance_id, {});
  return report_lifecycle(instance_id, request);
}

Result<json> AgentService::report_lifecycle(const std::string& instance_id, const json& request) {
  // Each field read by hand, in the order endured checks them: an older agent leaves
  // ExitCode and LastLines out, which AgentReportLifecycleRequest would refuse.
  api::AgentReportLifecycleRequest report;
  report.instance_id = instance_id;
  auto status = defaulted<std::string>(request, api::field::kStatus, "");
  if (!status) return status.error();
  report.status = *status;
  auto reported = parse_lifecycle_status(report.status);
  if (Status s = report.check(); !s) return s.error();
  auto row = store_.instance(instance_id);
  if (!row) return make_error(api::kUnauthorized, "not a valid join token for " + instance_id);
  auto exit_code = defaulted(request, api::field::kExitCode, -1);
  if (!exit_code) return exit_code.error();
  auto last_lines = defaulted<std::string>(request, api::field::kLastLines, "");
  if (!last_lines) return last_lines.error();
  report.exit_code = *exit_code;
  report.last_lines = *last_lines;
  auto change = decide_lifecycle_report(row->lifecycle_status, *reported, report.exit_code);
  if (!change) return api::AgentReportLifecycleReply{}.to_json();
  // Checked against the stored row inside the transaction: a reboot that raced this report
  // makes it InvalidTransition, and the agent reports again.
  Status s = apply(store_, *row, record_lifecycle(*change, report.exit_code, report.last_lines));
  if (!s) return s.error();
  // A replacement's OnCreate outcome is stored and the agent not yet answered: the agent
  // reports again, and the repeat changes nothing.
  if (!row->replaces.empty() && change->changed && change->to == LifecycleStatus::kSucceeded) {
    crash_point("recovery.after_lifecycle");
  }
  if (change->changed) wake_();
  return api::AgentReportLifecycleReply{}.to_json();
}

}  // namespace endure::controller
