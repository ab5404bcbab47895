// endure-agent: one per node. Runs the lifecycle script, reports it, heartbeats, follows the
// kernel log and the GPUs' events; as pid 1 of a local instance, boots the node and runs
// the agent under its init.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "agent/deep_check_runner.h"
#include "agent/health/health_check.h"
#include "agent/health/kernel_log.h"
#include "agent/health/nvml_events.h"
#include "agent/lifecycle.h"
#include "agent/memory_store.h"
#include "agent/local_boot.h"
#include "agent/node_init.h"
#include "agent/reporter.h"
#include "agent/swap_in.h"
#include "api/messages.h"
#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/command_line.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/ids.h"
#include "common/log.h"

using namespace endure;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_stop{false};

void on_term(int) { g_stop = true; }

agent::health::NodeExpectations expectations(const api::AgentConfig& c) {
  agent::health::NodeExpectations e;
  e.instance_id = c.instance_id;
  e.cpus = c.cpus;
  e.memory_mib = c.memory_mib;
  e.gpus = c.gpus;
  e.runs_slurmd = c.role == "worker";
  return e;
}

std::string describe(const std::vector<agent::health::Finding>& findings) {
  std::string out;
  for (const auto& f : findings) {
    out += std::string(api::name(f.kind)) + " (" + f.check + "): " + f.detail + "\n";
  }
  return out;
}

// Faults read from a log or raised by a driver, sent to endured at once, each named by its
// record.
void report_faults(agent::Reporter& reporter,
                   const std::vector<agent::health::LoggedFault>& found) {
  std::vector<api::LoggedFinding> logged;
  for (const auto& [record, f] : found) logged.push_back({record, f.kind, f.check, f.detail});
  reporter.report_logged(std::move(logged));
}

// The agent proper; restarted: its init started it again in the same boot (the lifecycle
// outcome stands and the daemons run: nothing is started again).
int run_agent(const std::string& config_path, bool restarted) {
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  signal(SIGPIPE, SIG_IGN);

  auto text = fs::read_file(config_path);
  if (!text) {
    log::error("{}", text.error().message);
    return 1;
  }
  auto config = api::AgentConfig::from_json(json::parse(*text, nullptr, false));
  if (!config) {
    log::error("{}", config.error().message);
    return 1;
  }
  auto endpoint = parse_endpoint(config->endpoint, config->ca_file);
  if (!endpoint) {
    log::error("{}", endpoint.error().message);
    return 1;
  }
  agent::DeepCheckRunner deep_checks(*config, HttpClient(*endpoint, config->token, 10));
  agent::Reporter reporter(*config, HttpClient(*endpoint, config->token, 10),
                           [&](const api::AgentHeartbeatReply& reply) {
                             deep_checks.on_order(reply.deep_health_check);
                           });
  std::thread reporter_thread([&] { reporter.run(g_stop); });

  int lifecycle_pid = 0;
  auto lifecycle_deadline = std::chrono::steady_clock::time_point::max();
  auto expect = expectations(*config);
  std::atomic<bool> in_service{false};
  if (restarted) {
    // The same boot: the outcome stands and its daemons run. A script that was running
    // lost its parent, so its outcome is unknown: the node failed.
    agent::LifecycleResult result{"Failed", -1, "the agent restarted while OnCreate ran\n"};
    if (auto saved = agent::saved_lifecycle_result()) result = *saved;
    log::info("agent restarted; lifecycle {}", result.status);
    reporter.report_lifecycle(result);
    in_service = result.status == "Succeeded";
  } else if (auto saved = agent::saved_lifecycle_result()) {
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

  // The node's memory store, while the cluster enables the memory tier.
  agent::MemoryStoreSupervisor memory_store(*config, config_path);

  // Continuous checks on a thread of their own: a check that waits on a hung /fsx must
  // not hold back heartbeats.
  std::thread checker([&] {
    auto checks = agent::health::continuous_checks(expect);
    auto period = std::chrono::milliseconds(static_cast<int>(config->health_check_seconds * 1000));
    while (!g_stop) {
      if (in_service) {
        reporter.set_findings(agent::health::run_all(checks));
        json gauges = agent::health::gather_gauges(checks);
        memory_store.gauges(gauges);
        reporter.set_gauges(std::move(gauges));
      }
      for (auto slept = 0ms; slept < period && !g_stop; slept += 100ms) {
        std::this_thread::sleep_for(100ms);
      }
    }
  });

  // Kernel log records as they are logged, each fault sent at once (not at the next round).
  std::thread kernel_log([&] {
    agent::health::KernelLogCheck log_check(expect);
    while (!g_stop) {
      log_check.wait_for_records(200ms);
      auto found = log_check.read_faults();
      if (!found.empty() && in_service) report_faults(reporter, found);
    }
  });

  // The GPUs' Xid and ECC events as the driver raises them (a node without GPUs: nothing).
  agent::health::NvmlEventWatch gpu_events(expect,
                                           [&](std::vector<agent::health::LoggedFault> found) {
                                             if (in_service) report_faults(reporter, found);
                                           });

  // Reaps the lifecycle script and the memory store (our children) and whatever else of
  // ours ends; the node's orphans go to its init.
  while (!g_stop) {
    memory_store.tick();
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      memory_store.exited(pid, status);
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
  reporter.wake();
  reporter_thread.join();
  checker.join();
  kernel_log.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = node::kAgentConfigPath;
  std::string boot_path;
  bool restarted = false;
  std::string swap_in_name, partition;
  CLI::App app{
      "endure-agent: one per node; runs its lifecycle scripts and health checks, and "
      "heartbeats to endured"};
  app.name("endure-agent");
  app.add_option("--config", config_path,
                 "the node's agent settings, JSON, written by endured when it makes the node")
      ->type_name("FILE")
      ->capture_default_str();
  app.add_flag("--restarted", restarted,
               "started again in the same boot by its service: the lifecycle's outcome stands "
               "and no daemon is started again");
  auto* boot = app.add_option("--local-boot", boot_path,
                              "boot a local instance from this file, as its pid 1, then run the "
                              "agent under its init (endured's local provider starts it so)")
                   ->type_name("FILE");
  auto* swap = app.add_option("--swap-in", swap_in_name,
                              "as a warm spare: take this replaced node's Slurm name, then exit")
                   ->type_name("NODE_NAME");
  app.add_option("--partition", partition,
                 "with --swap-in: the Slurm partition the node joins under its new name")
      ->type_name("PARTITION")
      ->needs(swap);
  boot->excludes(swap);
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [agent] %v");
  if (swap->count() > 0) {
    if (auto s = agent::swap_in(config_path, swap_in_name, partition); !s) {
      std::fprintf(stderr, "swap-in: %s\n", s.error().message.c_str());
      return 1;
    }
    return 0;
  }
  if (boot_path.empty()) return run_agent(config_path, restarted);
  if (auto s = agent::local_boot(boot_path); !s) {
    log::error("local boot failed: {}", s.error().message);
    return 1;
  }
  return agent::run_as_node_init([&](bool restarted) { return run_agent(config_path, restarted); });
}
