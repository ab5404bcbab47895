// The second opinion on a node whose heartbeats stopped: the provider's look at its
// processes and a bounded question to its Slurm daemon, judged by decide_silence. Acts on
// the answer: a verdict goes back to the recovery manager; an agent alone silent is
// restarted; a suspect not confirmed is told once in an event.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

class SilenceConfirmer {
 public:
  SilenceConfirmer(store::Store& store, provider::NodeProvider& provider, const Config& config,
                   HealthMonitor& health);

  // The verdict on a Running node's silence: nullopt while not confirmed (or not silent).
  std::optional<Verdict> confirm(const store::InstanceRow& row, bool is_controller_node);

 private:
  struct Suspect {
    double agent_restarted = 0;  // when endured last restarted its agent (0: never)
    bool told = false;           // the NodeSuspect event of this silence is written
  };

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  std::map<std::string, Suspect> suspects_;  // by instance id, while silent
};

}  // namespace endure::controller
