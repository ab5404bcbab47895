#include "controller/health_monitor.h"

#include <fmt/format.h>

#include <algorithm>

namespace endure::controller {

HealthMonitor::HealthMonitor(double heartbeat_timeout, std::function<double()> clock)
    : timeout_(heartbeat_timeout), clock_(std::move(clock)), started_(clock_()) {}

void HealthMonitor::heartbeat(const std::string& instance_id, const json& findings) {
  std::lock_guard lock(mu_);
  auto& node = nodes_[instance_id];
  node.last_heartbeat = clock_();
  node.findings = findings.is_array() ? findings : json::array();
}

void HealthMonitor::forget(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  nodes_.erase(instance_id);
}

std::optional<Verdict> HealthMonitor::assess(const std::string& instance_id, bool processes_exist,
                                             double watched_since) {
  if (!processes_exist) return Verdict{"crash", "every process of the instance is gone"};
  std::lock_guard lock(mu_);
  double now = clock_();
  auto it = nodes_.find(instance_id);
  double last = std::max(watched_since, started_);
  if (it != nodes_.end()) last = std::max(last, it->second.last_heartbeat);
  if (now - last > timeout_) {
    return Verdict{"hang", fmt::format("no heartbeat for {:.1f} s", now - last)};
  }
  if (it != nodes_.end() && !it->second.findings.empty()) {
    const auto& f = it->second.findings.front();
    return Verdict{f.value("Kind", "unknown"),
                   f.value("Check", "") + ": " + f.value("Detail", "")};
  }
  return std::nullopt;
}

double HealthMonitor::heartbeat_age(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(instance_id);
  if (it == nodes_.end()) return -1;
  return clock_() - it->second.last_heartbeat;
}

}  // namespace endure::controller
