// Looks every tenth of a second, between reconcile passes, for what must be judged at once:
// an instance whose processes are all gone, a node that fell silent past the suspect
// threshold. It decides nothing: it wakes the reconciler, whose pass judges.
#pragma once

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "provider/node_provider.h"

namespace endure::controller {

class HealthWatch {
 public:
  HealthWatch(provider::NodeProvider& provider, const Config& config, HealthMonitor& health,
              std::function<void()> wake);
  ~HealthWatch();

  void start();
  void stop();
  // One look (what the thread runs): true when it woke the reconciler.
  bool look();

 private:
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  std::function<void()> wake_;
  std::set<std::string> flagged_;  // woken for already, until it heartbeats again
  std::vector<std::pair<std::string, std::string>> heard_;  // health_.heard(), as of
  long long heard_generation_ = -1;                         // this generation
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace endure::controller
