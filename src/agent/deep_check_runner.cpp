#include "agent/deep_check_runner.h"

#include <chrono>

#include "api/wire.h"
#include "common/log.h"

namespace endure::agent {

using namespace std::chrono_literals;

health::DeepCheckOptions deep_check_options(const api::AgentConfig& config) {
  health::DeepCheckOptions o;
  o.cpu_threads = std::max(1, config.cpus);
  o.cpu_seconds = 2.0;
  o.memory_mib = 256;
  o.min_memory_gbps = 1.0;
  o.disk_mib = 128;
  o.min_disk_mbps = 50.0;
  o.network_seconds = 1.0;
  o.min_network_mbps = 200.0;
  return o;
}

DeepCheckRunner::DeepCheckRunner(const api::AgentConfig& config, HttpClient client)
    : config_(config), client_(std::move(client)) {}

DeepCheckRunner::~DeepCheckRunner() {
  if (worker_.joinable()) worker_.join();
  server_.stop();
}

void DeepCheckRunner::on_order(const std::optional<api::DeepCheckOrder>& order) {
  std::lock_guard lock(mu_);
  if (!order) {
    // The check is closed: the peer has measured us, the server can go.
    // Never wait here for a running check: this is the heartbeat thread.
    if (serving_ && finished_) {
      if (worker_.joinable()) worker_.join();
      server_.stop();
      serving_ = false;
    }
    return;
  }
  const std::string& id = order->id;
  if (id.empty() || id == current_id_ || !finished_) return;
  if (worker_.joinable()) worker_.join();
  finished_ = false;
  current_id_ = id;
  server_.stop();
  serving_ = server_.start(order->address, order->port);
  if (!serving_) log::warn("deep check {}: cannot serve the network test", id);
  worker_ = std::thread([this, order = *order] { run(order); });
}

void DeepCheckRunner::run(api::DeepCheckOrder order) {
  auto options = deep_check_options(config_);
  const std::string& id = order.id;
  log::info("deep check {}: starting", id);
  api::AgentReportDeepHealthCheckRequest report{config_.instance_id, id, {}};
  auto add = [&](const health::DeepResult& r) {
    report.results.push_back({r.check, r.passed, r.detail, r.metrics});
  };
  add(health::cpu_check(options));
  add(health::memory_check(options));
  add(health::disk_check(options));
  if (order.peer) {
    health::DeepResult net;
    // The peer starts serving when its own heartbeat brings the order: give it a moment.
    for (int attempt = 0; attempt < 10; ++attempt) {
      net = health::network_check(*order.peer, order.port, options);
      if (net.passed || net.metrics.value("bytes", 0L) > 0) break;
      std::this_thread::sleep_for(500ms);
    }
    add(net);
  }
  json body = report.to_json();
  for (int attempt = 0; attempt < 30; ++attempt) {
    if (client_.post(std::string(api::kPathPrefix) + api::kAgentReportDeepHealthCheck, body)) break;
    std::this_thread::sleep_for(1s);
  }
  log::info("deep check {}: reported", id);
  finished_ = true;
}

}  // namespace endure::agent
