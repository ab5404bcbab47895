// Runs the deep health check endured orders through heartbeat replies: the local checks,
// then the network test to the peer, while serving the peer's test to this node.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/health/deep.h"
#include "api/messages.h"
#include "api/node_files.h"
#include "common/http_client.h"
#include "common/json.h"

namespace endure::agent {

class DeepCheckRunner {
 public:
  DeepCheckRunner(const api::AgentConfig& config, HttpClient client);
  ~DeepCheckRunner();

  // Called with every heartbeat reply's DeepHealthCheck (empty when none is open).
  void on_order(const std::optional<api::DeepCheckOrder>& order);

 private:
  void run(api::DeepCheckOrder order);

  const api::AgentConfig& config_;
  HttpClient client_;
  std::mutex mu_;
  std::string current_id_;
  health::BandwidthServer server_;
  bool serving_ = false;
  std::atomic<bool> finished_{true};  // the worker has reported (joining it cannot block)
  std::thread worker_;
};

// The deep checks' sizes and thresholds for a node of this instance type (see README).
health::DeepCheckOptions deep_check_options(const api::AgentConfig& config);

}  // namespace endure::agent
