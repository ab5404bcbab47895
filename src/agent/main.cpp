// endure-agent: one per node. Runs the lifecycle script, reports it, heartbeats, and (as
// pid 1 of a local instance) reaps every orphan in the node.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent_config.h"
#include "agent/deep_check_runner.h"
#include "agent/health/health_check.h"
#include "agent/lifecycle.h"
#include "agent/local_boot.h"
#include "api/messages.h"
#include "api/node_contract.h"
#include "api/wire.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/ids.h"
#include "common/log.h"

using namespace endure;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_stop{false};

void on_term(int) { g_stop = true; }

// Sends heartbeats and the latest lifecycle outcome until endured has taken it; keeps
// trying while endured is away (it may be restarting).
class Reporter {
 public:
  Reporter(const agent::AgentConfig& config, HttpClient client,
           std::function<void(const api::AgentHeartbeatReply&)> on_orders)
      : config_(config), client_(std::move(client)), on_orders_(std::move(on_orders)) {}

  void report_lifecycle(const agent::LifecycleResult& result) {
    std::lock_guard lock(mu_);
    pending_ = result;
    cv_.notify_all();
  }

  // The findings of the latest health-check round, sent with every heartbeat.
  void set_findings(std::vector<api::Finding> findings) {
    std::lock_guard lock(mu_);
    findings_ = std::move(findings);
  }

  void run() {
    auto path = [](const char* action) { return std::string(api::kPathPrefix) + action; };
    auto next_beat = std::chrono::steady_clock::now();
    while (!g_stop) {
      std::optional<agent::LifecycleResult> pending;
      {
        std::lock_guard lock(mu_);
        pending = pending_;
      }
      if (pending) {
        api::AgentReportLifecycleRequest body{pending->status, pending->exit_code,
                                              pending->last_lines, config_.instance_id};
        auto reply = client_.post(path(api::kAgentReportLifecycle), body.to_json());
        if (reply) {
          std::lock_guard lock(mu_);
          if (pending_ && pending_->status == pending->status) pending_.reset();
        } else {
          log::warn("agent: lifecycle report not taken: {}", reply.error().message);
        }
      }
      if (std::chrono::steady_clock::now() >= next_beat) {
        api::AgentHeartbeatRequest beat{config_.instance_id, {}};
        {
          std::lock_guard lock(mu_);
          beat.findings = findings_;
        }
        auto reply = client_.post(path(api::kAgentHeartbeat), beat.to_json());
        if (reply) {
          auto orders = api::AgentHeartbeatReply::from_json(*reply);
          if (orders) {
            on_orders_(*orders);
          } else {
            log::warn("agent: heartbeat reply not understood: {}", orders.error().message);
          }
        }
        next_beat = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int>(config_.heartbeat_seconds * 1000));
      }
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, pending_ ? 1000ms : 200ms);
    }
  }

 private:
  const agent::AgentConfig& config_;
  HttpClient client_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<agent::LifecycleResult> pending_;
  std::vector<api::Finding> findings_;
  std::function<void(const api::AgentHeartbeatReply&)> on_orders_;
};

agent::health::NodeExpectations expectations(const agent::AgentConfig& c) {
  agent::health::NodeExpectations e;
  e.node_name = c.node_name;
  e.cpus = c.cpus;
  e.memory_mib = c.memory_mib;
  e.gpus = c.gpus;
  e.runs_slurmd = c.role == "worker";
  return e;
}

std::string describe(const std::vector<agent::health::Finding>& findings) {
  std::string out;
  for (const auto& f : findings) out += f.kind + " (" + f.check + "): " + f.detail + "\n";
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: endure-agent [--config PATH]\n"
               "       endure-agent --local-boot BOOT_JSON   (pid 1 of a local instance)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = node::kAgentConfigPath;
  std::string boot_path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--local-boot" && i + 1 < argc)
      boot_path = argv[++i];
    else if (arg == "--config" && i + 1 < argc)
      config_path = argv[++i];
    else
      return usage();
  }
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [agent] %v");
  if (!boot_path.empty()) {
    if (auto s = agent::local_boot(boot_path); !s) {
      log::error("local boot failed: {}", s.error().message);
      return 1;
    }
  }
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  signal(SIGPIPE, SIG_IGN);

  auto text = fs::read_file(config_path);
  if (!text) {
    log::error("{}", text.error().message);
    return 1;
  }
  auto config = agent::AgentConfig::from_json(json::parse(*text, nullptr, false));
  if (!config) {
    log::error("{}", config.error().message);
    return 1;
  }
  auto endpoint = parse_endpoint(config->endpoint);
  if (!endpoint) {
    log::error("{}", endpoint.error().message);
    return 1;
  }
  agent::DeepCheckRunner deep_checks(*config, HttpClient(*endpoint, config->token, 10));
  Reporter reporter(*config, HttpClient(*endpoint, config->token, 10),
                    [&](const api::AgentHeartbeatReply& reply) {
                      deep_checks.on_order(reply.deep_health_check);
                    });
  std::thread reporter_thread([&] { reporter.run(); });

  int lifecycle_pid = 0;
  auto lifecycle_deadline = std::chrono::steady_clock::time_point::max();
  auto expect = expectations(*config);
  std::atomic<bool> in_service{false};
  if (auto saved = agent::saved_lifecycle_result()) {
    // A reboot: the lifecycle script ran already; the boot scripts start the daemons.
    agent::LifecycleResult result = *saved;
    // /run is a tmpfs on a real machine: nothing of the last boot's pid files or sockets
    // is left in it.
    for (const char* run_dir : {"/run/slurm", "/run/munge"}) {
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec)) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
    if (saved->status == "Succeeded") result = agent::run_boot_scripts(*config);
    log::info("boot scripts: {}", result.status);
    reporter.report_lifecycle(result);
    in_service = result.status == "Succeeded";
  } else if (auto basic = agent::health::run_all(agent::health::basic_checks(expect));
             !basic.empty()) {
    // A node that fails its basic checks never runs its lifecycle script, so it never
    // starts slurmd and never receives a job.
    agent::LifecycleResult failed{"Failed", -1, "basic health checks failed:\n" + describe(basic)};
    log::error("{}", failed.last_lines);
    log::ok(agent::save_lifecycle_result(failed), "save the lifecycle result");
    reporter.report_lifecycle(failed);
  } else if (auto started = agent::start_lifecycle(*config); started) {
    lifecycle_pid = *started;
    lifecycle_deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(config->lifecycle_timeout_seconds);
    reporter.report_lifecycle({"InProgress", -1, ""});
    log::info("lifecycle: started {} as pid {}", config->on_create, lifecycle_pid);
  } else {
    agent::LifecycleResult failed{"Failed", -1, started.error().message + "\n"};
    log::ok(agent::save_lifecycle_result(failed), "save the lifecycle result");
    reporter.report_lifecycle(failed);
  }

  // Continuous checks on a thread of their own: a check that waits on a hung /fsx must
  // not hold back heartbeats.
  std::thread checker([&] {
    auto checks = agent::health::continuous_checks(expect);
    auto period = std::chrono::milliseconds(static_cast<int>(config->health_check_seconds * 1000));
    while (!g_stop) {
      if (in_service) {
        std::vector<api::Finding> findings;
        for (const auto& f : agent::health::run_all(checks)) {
          findings.push_back({f.kind, f.check, f.detail});
        }
        reporter.set_findings(std::move(findings));
      }
      for (auto slept = 0ms; slept < period && !g_stop; slept += 100ms) {
        std::this_thread::sleep_for(100ms);
      }
    }
  });

  // As pid 1 every orphan of the node is ours to reap.
  while (!g_stop) {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == lifecycle_pid) {
        auto result = agent::lifecycle_outcome(status, false, config->lifecycle_timeout_seconds);
        log::info("lifecycle: {} with exit code {}", result.status, result.exit_code);
        log::ok(agent::save_lifecycle_result(result), "save the lifecycle result");
        reporter.report_lifecycle(result);
        in_service = result.status == "Succeeded";
        lifecycle_pid = 0;
      }
    }
    if (lifecycle_pid > 0 && std::chrono::steady_clock::now() > lifecycle_deadline) {
      kill(-lifecycle_pid, SIGKILL);
      waitpid(lifecycle_pid, &status, 0);
      auto result = agent::lifecycle_outcome(status, true, config->lifecycle_timeout_seconds);
      log::ok(agent::save_lifecycle_result(result), "save the lifecycle result");
      reporter.report_lifecycle(result);
      lifecycle_pid = 0;
    }
    std::this_thread::sleep_for(100ms);
  }
  reporter_thread.join();
  checker.join();
  return 0;
}
