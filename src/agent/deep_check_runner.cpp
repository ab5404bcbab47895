#include "agent/deep_check_runner.h"

#include <chrono>

#include "api/wire.h"
#include "common/log.h"

namespace endure::agent {

using namespace std::chrono_literals;

health::DeepCheckOptions deep_check_options(const AgentConfig& config) {
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

DeepCheckRunner::DeepCheckRunner(const AgentConfig& config, HttpClient client)
    : config_(config), client_(std::move(client)) {}

DeepCheckRunner::~DeepCheckRunner() {
  if (worker_.joinable()) worker_.join();
  server_.stop();
}

void DeepCheckRunner::on_order(const json& order) {
  std::lock_guard lock(mu_);
  if (!order.is_object()) {
    // The check is closed: the peer has measured us, the server can go.
    // Never wait here for a running check: this is the heartbeat thread.
    if (serving_ && finished_) {
      if (worker_.joinable()) worker_.join();
      server_.stop();
      serving_ = false;
    }
    return;
  }
  std::string id = order.value("Id", "");
  if (id.empty() || id == current_id_ || !finished_) return;
  if (worker_.joinable()) worker_.join();
  finished_ = false;
  current_id_ = id;
  server_.stop();
  serving_ = server_.start(order.value("Address", ""), order.value("Port", api::kDeepCheckNetworkPort));
  if (!serving_) log::warn("deep check {}: cannot serve the network test", id);
  worker_ = std::thread([this, order] { run(order); });
}

void DeepCheckRunner::run(json order) {
  auto options = deep_check_options(config_);
  std::string id = order.value("Id", "");
  log::info("deep check {}: starting", id);
  json results = json::array();
  results.push_back(health::cpu_check(options).to_json());
  results.push_back(health::memory_check(options).to_json());
  results.push_back(health::disk_check(options).to_json());
  if (order.contains("Peer")) {
    std::string peer = order["Peer"];
    int port = order.value("Port", api::kDeepCheckNetworkPort);
    health::DeepResult net;
    // The peer starts serving when its own heartbeat brings the order: give it a moment.
    for (int attempt = 0; attempt < 10; ++attempt) {
      net = health::network_check(peer, port, options);
      if (net.passed || net.metrics.value("bytes", 0L) > 0) break;
      std::this_thread::sleep_for(500ms);
    }
    results.push_back(net.to_json());
  }
  json body = {{"InstanceId", config_.instance_id}, {"Id", id}, {"Results", results}};
  for (int attempt = 0; attempt < 30; ++attempt) {
    if (client_.post(std::string(api::kPathPrefix) + api::kAgentReportDeepHealthCheck, body)) break;
    std::this_thread::sleep_for(1s);
  }
  log::info("deep check {}: reported", id);
  finished_ = true;
}

}  // namespace endure::agent
