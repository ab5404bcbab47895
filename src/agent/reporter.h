// The agent's line to endured: heartbeats with the latest check round's findings, the
// lifecycle outcome until endured has taken it, and logged findings the moment they are
// seen. Keeps trying while endured is away (it may be restarting).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "agent/lifecycle.h"
#include "api/messages.h"
#include "api/node_files.h"
#include "common/http_client.h"

namespace endure::agent {

class Reporter {
 public:
  // At most this many logged findings wait for endured; older ones go first (a storm of
  // records is one fault, and endured needs only the first to judge).
  static constexpr std::size_t kMaxQueued = 256;

  Reporter(const api::AgentConfig& config, HttpClient client,
           std::function<void(const api::AgentHeartbeatReply&)> on_orders);

  void report_lifecycle(const LifecycleResult& result);
  // The findings of the latest health-check round, sent with every heartbeat.
  void set_findings(std::vector<api::Finding> findings);
  // The node's gauges of that round (health::gather_gauges), sent with every heartbeat.
  void set_gauges(json gauges);
  // Sent now, and again until endured takes them.
  void report_logged(std::vector<api::LoggedFinding> findings);

  // Runs until stop is set.
  void run(const std::atomic<bool>& stop);
  void wake();

 private:
  void send_lifecycle();
  void send_logged();
  void send_heartbeat();

  const api::AgentConfig& config_;
  HttpClient client_;
  std::function<void(const api::AgentHeartbeatReply&)> on_orders_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<LifecycleResult> pending_;
  std::vector<api::Finding> findings_;
  json gauges_ = json::object();
  std::deque<api::LoggedFinding> logged_;
  bool fresh_ = false;  // logged findings came since the last send
};

}  // namespace endure::agent
