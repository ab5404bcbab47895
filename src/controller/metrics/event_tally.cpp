#include "controller/metrics/event_tally.h"

#include "api/fault_kind.h"

namespace endure::metrics {
namespace {

constexpr std::string_view kUnhealthy = "Unhealthy: ";

}  // namespace

std::string verdict_kind(std::string_view d) {
  if (d.substr(0, kUnhealthy.size()) == kUnhealthy) d.remove_prefix(kUnhealthy.size());
  if (d.substr(0, 7) == "Action:") return "manual";
  auto end = d.find_first_of(": ");
  std::string_view kind = d.substr(0, end);
  return api::parse_fault_kind(kind) ? std::string(kind) : "other";
}

std::string verdict_action(std::string_view d) {
  auto arrow = d.rfind(" -> ");
  if (arrow == std::string_view::npos) return "";
  std::string_view action = d.substr(arrow + 4);
  if (action == "Reboot" || action == "Replace") return std::string(action);
  return "";
}

void EventTally::fold(const store::EventRow& ev) {
  cursor_ = ev.id;
  events[ev.type] += 1;
  const std::string& type = ev.type;
  if (type == "NodeUnhealthy" || type == "NodeRecoveryRequested") {
    if (type == "NodeUnhealthy") verdicts[verdict_kind(ev.description)] += 1;
    std::string action = verdict_action(ev.description);
    // NodeRecovery None marks the node failed and acts no further: nothing to time.
    if (action.empty()) return;
    // A second verdict during a recovery (a failed reboot) keeps the first detection time.
    auto [it, fresh] = open_.try_emplace(ev.node_name, Open{ev.time, action, false});
    if (!fresh) it->second.action = action;
  } else if (type == "NodeDrained") {
    auto it = open_.find(ev.node_name);
    if (it == open_.end() || it->second.drained) return;
    it->second.drained = true;
    to_drained[it->second.action].observe(ev.time - it->second.detected);
  } else if (type == "NodeRebooting" || type == "NodeReplacing") {
    std::string action = type == "NodeRebooting" ? "Reboot" : "Replace";
    recoveries[action] += 1;
    if (auto it = open_.find(ev.node_name); it != open_.end()) it->second.action = action;
  } else if (type == "NodeReturnedToService") {
    auto it = open_.find(ev.node_name);
    if (it == open_.end()) return;
    to_in_service[it->second.action].observe(ev.time - it->second.detected);
    open_.erase(it);
  } else if (type == "AutoResumeRequested") {
    auto_resumes["granted"] += 1;
  } else if (type == "AutoResumeExhausted") {
    auto_resumes["refused"] += 1;
  } else if (type == "AutoResumeDeclined") {
    auto_resumes["declined"] += 1;
  } else if (type == "AutoResumeReady") {
    auto_resumes["ready"] += 1;
  } else if (type == "AutoResumeFailed") {
    auto_resumes["failed"] += 1;
  } else if (type == "InstanceTerminated" || type == "InstanceFailed") {
    // A node deleted mid-recovery never returns: stop timing it (a new node of the same
    // name starts afresh).
    if (auto it = open_.find(ev.node_name); it != open_.end() && it->second.action != "Replace") {
      open_.erase(it);
    }
  }
}

}  // namespace endure::metrics
