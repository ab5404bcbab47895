#include "controller/core/health_monitor.h"

#include <algorithm>

namespace endure::controller {

namespace {

// A storm of records is one fault: a node keeps at most this many.
constexpr std::size_t kMaxLogged = 64;

}  // namespace

HealthMonitor::HealthMonitor(std::function<double()> clock)
    : clock_(std::move(clock)), started_(clock_()) {}

void HealthMonitor::heartbeat(const std::string& instance_id, std::vector<api::Finding> findings,
                              const std::string& cluster_id) {
  std::lock_guard lock(mu_);
  auto [it, added] = nodes_.try_emplace(instance_id);
  if (added) ++heard_generation_;
  auto& node = it->second;
  node.last_heartbeat = clock_();
  node.findings = std::move(findings);
  if (!cluster_id.empty()) node.cluster_id = cluster_id;
}

int HealthMonitor::logged(const std::string& instance_id,
                          const std::vector<api::LoggedFinding>& findings) {
  std::lock_guard lock(mu_);
  auto [it, added] = nodes_.try_emplace(instance_id);
  if (added) ++heard_generation_;
  auto& node = it->second;
  int fresh = 0;
  for (const auto& f : findings) {
    if (!node.records.insert(f.record_id).second) continue;
    ++fresh;
    if (node.logged.size() < kMaxLogged) node.logged.push_back(f);
  }
  return fresh;
}

void HealthMonitor::forget(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  if (nodes_.erase(instance_id) > 0) ++heard_generation_;
}

std::optional<Verdict> HealthMonitor::assess(const std::string& instance_id, bool processes_exist) {
  if (!processes_exist) {
    return Verdict{api::FaultKind::kCrash, "every process of the instance is gone"};
  }
  std::lock_guard lock(mu_);
  auto it = nodes_.find(instance_id);
  if (it == nodes_.end()) return std::nullopt;
  if (!it->second.logged.empty()) {
    const auto& f = it->second.logged.front();
    return Verdict{f.kind, f.check + ": " + f.detail};
  }
  if (!it->second.findings.empty()) {
    const auto& f = it->second.findings.front();
    return Verdict{f.kind, f.check + ": " + f.detail};
  }
  return std::nullopt;
}

double HealthMonitor::silent_for(const std::string& instance_id, double watched_since) {
  std::lock_guard lock(mu_);
  double last = std::max(watched_since, started_);
  if (auto it = nodes_.find(instance_id); it != nodes_.end()) {
    last = std::max(last, it->second.last_heartbeat);
  }
  return clock_() - last;
}

double HealthMonitor::heartbeat_age(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(instance_id);
  if (it == nodes_.end()) return -1;
  return clock_() - it->second.last_heartbeat;
}

std::vector<std::pair<std::string, std::string>> HealthMonitor::heard() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [id, node] : nodes_) {
    if (!node.cluster_id.empty()) out.emplace_back(node.cluster_id, id);
  }
  return out;
}

long long HealthMonitor::heard_generation() {
  std::lock_guard lock(mu_);
  return heard_generation_;
}

std::set<std::string> HealthMonitor::silent_for_at_least(double seconds) {
  std::lock_guard lock(mu_);
  const double now = clock_();
  std::set<std::string> out;
  for (const auto& [id, node] : nodes_) {
    if (now - node.last_heartbeat >= seconds) out.insert(id);
  }
  return out;
}

}  // namespace endure::controller
