// The node's memory store (endure-memstore), kept running by the agent while the cluster
// enables the memory tier (node::kMemoryStoreConfigPath exists): started at the node's own
// address, started again a second after it exits, started again when endured rewrites the
// file (an UpdateCluster of its share) or the node's address changes (a warm spare swapped
// in takes the replaced node's name, and with it the address its peers look for), and
// stopped when the file goes. What
// it holds is in a tmpfs folder named after this instance, so a restarted store serves it
// again and a replacement instance (another id) starts empty, as a new machine would.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "api/node_files.h"

namespace endure::agent {

class MemoryStoreSupervisor {
 public:
  // config_path: the agent's config, whose node name a swap-in rewrites.
  MemoryStoreSupervisor(const api::AgentConfig& config, std::string config_path);
  ~MemoryStoreSupervisor();  // stops the store

  // Called every round of the agent's loop: starts (or restarts) the store when due.
  void tick();
  // The agent reaped `pid`: when it is the store, it is started again after a pause.
  void exited(int pid, int status);

  // The tmpfs folder of an instance's store.
  static std::string arena_of(const std::string& instance_id);

  // The store's figures (its /v1/stats) as the heartbeat's gauges (api/node_gauges.h);
  // nothing when the tier is off or the store does not answer within a second. Safe from
  // any thread.
  void gauges(json& out) const;

 private:
  // Where the store is to listen: the node's address under its current name, as its hosts
  // file says, else as resource_config.json says; "" when neither names it.
  std::string address_now() const;
  void start(const std::string& address);
  void stop();
  api::AgentConfig config_;
  std::string config_path_;
  mutable std::mutex mu_;
  std::string address_;  // where the running store listens (under mu_: gauges() reads it)
  int pid_ = 0;
  std::chrono::steady_clock::time_point next_start_{};
  std::string started_with_;  // the file's text the running store was started with
};

}  // namespace endure::agent
