#include "agent/reporter.h"

#include "api/wire.h"
#include "common/log.h"

namespace endure::agent {

using namespace std::chrono_literals;

namespace {

std::string path(const char* action) { return std::string(api::kPathPrefix) + action; }

}  // namespace

Reporter::Reporter(const api::AgentConfig& config, HttpClient client,
                   std::function<void(const api::AgentHeartbeatReply&)> on_orders)
    : config_(config), client_(std::move(client)), on_orders_(std::move(on_orders)) {}

void Reporter::report_lifecycle(const LifecycleResult& result) {
  std::lock_guard lock(mu_);
  pending_ = result;
  cv_.notify_all();
}

void Reporter::set_findings(std::vector<api::Finding> findings) {
  std::lock_guard lock(mu_);
  findings_ = std::move(findings);
}

void Reporter::set_gauges(json gauges) {
  std::lock_guard lock(mu_);
  gauges_ = std::move(gauges);
}

void Reporter::report_logged(std::vector<api::LoggedFinding> findings) {
  std::lock_guard lock(mu_);
  for (auto& f : findings) logged_.push_back(std::move(f));
  while (logged_.size() > kMaxQueued) logged_.pop_front();
  fresh_ = true;
  cv_.notify_all();
}

void Reporter::wake() { cv_.notify_all(); }

void Reporter::send_lifecycle() {
  std::optional<LifecycleResult> pending;
  {
    std::lock_guard lock(mu_);
    pending = pending_;
  }
  if (!pending) return;
  api::AgentReportLifecycleRequest body{pending->status, pending->exit_code, pending->last_lines,
                                        config_.instance_id};
  auto reply = client_.post(path(api::kAgentReportLifecycle), body.to_json());
  if (!reply) {
    log::warn("agent: lifecycle report not taken: {}", reply.error().message);
    return;
  }
  std::lock_guard lock(mu_);
  if (pending_ && pending_->status == pending->status) pending_.reset();
}

void Reporter::send_logged() {
  api::AgentReportFindingsRequest body{config_.instance_id, {}};
  {
    std::lock_guard lock(mu_);
    body.findings.assign(logged_.begin(), logged_.end());
  }
  if (body.findings.empty()) return;
  auto reply = client_.post(path(api::kAgentReportFindings), body.to_json());
  if (!reply) {
    log::warn("agent: {} findings not taken yet: {}", body.findings.size(), reply.error().message);
    return;
  }
  // Only what was sent: records queued meanwhile go in the next call.
  std::lock_guard lock(mu_);
  for (const auto& sent : body.findings) {
    if (!logged_.empty() && logged_.front().record_id == sent.record_id) logged_.pop_front();
  }
}

void Reporter::send_heartbeat() {
  api::AgentHeartbeatRequest beat{config_.instance_id, {}};
  {
    std::lock_guard lock(mu_);
    beat.findings = findings_;
    beat.metrics = gauges_;
  }
  auto reply = client_.post(path(api::kAgentHeartbeat), beat.to_json());
  if (!reply) return;
  auto orders = api::AgentHeartbeatReply::from_json(*reply);
  if (orders) {
    on_orders_(*orders);
  } else {
    log::warn("agent: heartbeat reply not understood: {}", orders.error().message);
  }
}

void Reporter::run(const std::atomic<bool>& stop) {
  const auto period = std::chrono::milliseconds(static_cast<int>(config_.heartbeat_seconds * 1000));
  auto next_beat = std::chrono::steady_clock::now();
  while (!stop) {
    send_logged();
    send_lifecycle();
    if (std::chrono::steady_clock::now() >= next_beat) {
      send_heartbeat();
      next_beat = std::chrono::steady_clock::now() + period;
    }
    std::unique_lock lock(mu_);
    // Woken at once by a logged finding; otherwise at the next beat, or a retry.
    auto until = std::min(next_beat, std::chrono::steady_clock::now() +
                                         (pending_ || !logged_.empty() ? 200ms : 1000ms));
    cv_.wait_until(lock, until, [&] { return stop || fresh_; });
    fresh_ = false;
  }
}

}  // namespace endure::agent
