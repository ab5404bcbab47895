// What endured hears from agents: heartbeats, each with its check round's findings, and
// logged findings (a kernel log record) sent the moment they were seen. Kept in memory:
// they are liveness, not history; after a controller restart every node gets a fresh grace
// period. Silence is measured here and judged elsewhere (decide_silence, with a second
// opinion from the provider and Slurm). The clock comes from outside, so the monitor runs
// under a fake clock in unit tests.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/messages.h"
#include "common/json.h"

namespace endure::controller {

struct Verdict {
  api::FaultKind fault = api::FaultKind::kCrash;  // the key of recovery_policy.h's table
  std::string detail;                             // for people
};

class HealthMonitor {
 public:
  explicit HealthMonitor(std::function<double()> clock);

  // An agent's heartbeat with its findings (empty when healthy). cluster_id lets the health
  // watch find the instance's provider record.
  void heartbeat(const std::string& instance_id, std::vector<api::Finding> findings,
                 const std::string& cluster_id = "");
  // Logged findings; a RecordId already taken is not counted again. Returns how many
  // were new. They stand until the instance is forgotten (a fault logged once does not
  // heal by itself).
  int logged(const std::string& instance_id, const std::vector<api::LoggedFinding>& findings);
  // Forgets an instance (terminated, or booting again: a reboot restarts kmsg's sequence).
  void forget(const std::string& instance_id);

  // The verdict on an instance in service from what it reported, or a crash when none of
  // its processes is left: nullopt while healthy or merely silent.
  std::optional<Verdict> assess(const std::string& instance_id, bool processes_exist);

  // Seconds without a heartbeat, counted from watched_since (when it entered service) or
  // the monitor's start when either is later than the last heartbeat.
  double silent_for(const std::string& instance_id, double watched_since);

  // Seconds since the last heartbeat, negative when none was heard.
  double heartbeat_age(const std::string& instance_id);

  // (cluster id, instance id) of every instance heard from.
  std::vector<std::pair<std::string, std::string>> heard();
  // Changes whenever an instance is first heard from or forgotten: heard() need not be
  // asked again while it stays the same.
  long long heard_generation();
  // Instances heard from whose last heartbeat is at least seconds old, in one pass.
  std::set<std::string> silent_for_at_least(double seconds);

 private:
  struct Node {
    std::string cluster_id;
    double last_heartbeat = 0;
    std::vector<api::Finding> findings;
    std::vector<api::LoggedFinding> logged;
    std::set<std::string> records;
  };
  std::function<double()> clock_;
  double started_;
  std::mutex mu_;
  std::map<std::string, Node> nodes_;
  long long heard_generation_ = 0;
};

}  // namespace endure::controller
