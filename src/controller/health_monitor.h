// Turns what endured hears from agents (heartbeats and their findings) and sees of
// instances (processes alive) into verdicts. Heartbeats are kept in memory: they are
// liveness, not history; after a controller restart every node gets a fresh grace period.
// The clock comes from outside, so the policy runs under a fake clock in unit tests.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace endure::controller {

struct Verdict {
  std::string fault;   // the fault kind (see recovery_policy.h)
  std::string detail;  // for people
};

class HealthMonitor {
 public:
  // A node whose processes exist but that has not heartbeat for heartbeat_timeout
  // seconds is hung.
  HealthMonitor(double heartbeat_timeout, std::function<double()> clock);

  // An agent's heartbeat with its findings ([{Kind, Check, Detail}], empty when healthy).
  void heartbeat(const std::string& instance_id, const json& findings);
  // Forgets an instance (terminated, or booting again).
  void forget(const std::string& instance_id);

  // The verdict on an instance in service: nullopt while healthy. processes_exist says
  // whether any of its processes is left; watched_since is when it entered service.
  std::optional<Verdict> assess(const std::string& instance_id, bool processes_exist,
                                double watched_since);

  // Seconds since the last heartbeat, negative when none was heard.
  double heartbeat_age(const std::string& instance_id);

 private:
  struct Node {
    double last_heartbeat = 0;
    json findings = json::array();
  };
  double timeout_;
  std::function<double()> clock_;
  double started_;
  std::mutex mu_;
  std::map<std::string, Node> nodes_;
};

}  // namespace endure::controller
