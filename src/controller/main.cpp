// endured: the controller. Runs in the foreground (a daemon manager may supervise it);
// state, token and endpoint live under $ENDURE_HOME (default ~/.endure).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/command_line.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/tls.h"
#include "console/console_files.h"
#include "controller/api_server.h"
#include "controller/config.h"
#include "controller/health_watch.h"
#include "controller/metrics/collector.h"
#include "controller/node_state.h"
#include "controller/reconciler.h"
#include "controller/training_metrics.h"
#include "provider/routed_provider.h"
#include "store/store.h"

using namespace endure;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

std::filesystem::path default_home() {
  if (const char* h = getenv("ENDURE_HOME"); h && *h) return h;
  const char* home = getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/root") / ".endure";
}

// The operator token: made once, mode 0600, kept across restarts.
Result<std::string> load_or_create_token(const std::filesystem::path& path) {
  if (auto text = fs::read_file(path); text) {
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    if (!t.empty()) return t;
  }
  std::string token = ids::new_token();
  if (auto s = fs::atomic_write_file(path, token + "\n", 0600); !s) return s.error();
  return token;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endured: the endure cluster controller"};
  app.name("endured");
  std::string home;
  int port = 0;
  app.add_option("--home", home, "state folder (default $ENDURE_HOME or ~/.endure)");
  app.add_option("--port", port, "HTTP port on 127.0.0.1 (default 7117, or config.json Port)")
      ->check(CLI::Range(1, 65535));
  std::string footer = "Settings in $ENDURE_HOME/config.json (name: default, what it does):";
  for (const auto& s : controller::settings()) {
    footer += fmt::format("\n  {}: {:g}, {}", s.name, s.default_value, s.doc);
  }
  app.footer(footer);
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [endured] [%l] %v");

  controller::Config config;
  config.home = home.empty() ? default_home() : std::filesystem::path(home);
  if (auto s = fs::make_dirs(config.home, 0700); !s) {
    log::error("{}", s.error().message);
    return 1;
  }
  config.home = std::filesystem::canonical(config.home);
  if (auto text = fs::read_file(config.home / "config.json"); text) {
    auto j = json::parse(*text, nullptr, false);
    if (auto s = config.apply_json(j); !s) {
      log::error("{}", s.error().message);
      return 2;
    }
  }
  if (port) config.port = port;
  config.bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  auto agent_path = config.bin_dir / "endure-agent";
  if (!std::filesystem::exists(agent_path)) {
    log::error("{} not found: endure-agent must sit beside endured", agent_path.string());
    return 1;
  }
  if (geteuid() != 0) {
    log::error("endured needs root: local instances are Linux namespaces");
    return 1;
  }

  auto token = load_or_create_token(config.token_path());
  if (!token) {
    log::error("{}", token.error().message);
    return 1;
  }
  auto store = store::Store::open(config.db_path().string());
  if (!store) {
    log::error("{}", store.error().message);
    return 1;
  }
  for (const auto& dir : {config.clusters_dir(), config.secrets_dir()}) {
    if (!log::ok(fs::make_dirs(dir, 0700), "endured")) return 1;
  }
  provider::LocalProvider local(config.clusters_dir(), agent_path);
  provider::HostRegistry hosts(**store, provider::ssh_state_root(config.home));
  provider::HostProvider on_hosts(hosts, {config.bin_dir, config.bin_dir.parent_path() / "lib"},
                                  config.tls_dir() / "ca.pem", config.home / "hosts");
  provider::RoutedProvider provider(local, on_hosts);
  controller::HealthMonitor health(ids::now_seconds);
  controller::RecoveryManager recovery(**store, provider, config, health);
  controller::AutoResumeManager auto_resume(**store, config, health);
  recovery.set_node_lost_hook([&](const store::ClusterRow& cluster, const std::string& node,
                                  const std::string& reason, const controller::SlurmView& slurm,
                                  const std::vector<slurm::JobState>& jobs_before) {
    auto_resume.node_lost(cluster, node, reason, slurm, jobs_before);
  });
  controller::DeepCheckManager deep_checks(**store, provider, config, health);
  controller::SoftwareUpdateManager software_updates(**store, provider, config, health);
  controller::Reconciler reconciler(**store, provider, config, health, recovery, deep_checks,
                                    software_updates, auto_resume, hosts);
  auto wake = [&] { reconciler.wake(); };
  controller::HealthWatch health_watch(provider, config, health, wake);
  controller::ClusterService clusters(**store, provider, config, health, recovery, wake);
  controller::FaultInjector faults(**store, provider);
  controller::AgentService agents(**store, health, deep_checks, wake);
  controller::HostService host_service(hosts);
  controller::TrainingService training(**store);
  controller::ApiRouter router({**store, clusters, deep_checks, software_updates, faults, agents,
                                auto_resume, host_service, training, wake,
                                [&] { return reconciler.passes(); }});
  controller::ApiServer server(router, *token);
  controller::HttpExtras extras;
  extras.console_file = console::file;
  // /metrics: rendered from the store, the agents' gauges, the API's calls and Slurm's
  // view, which a thread of its own samples (a scrape never runs a Slurm command).
  metrics::NodeGauges node_gauges;
  metrics::ApiStats api_stats;
  metrics::SlurmSampler slurm_sampler(
      **store, metrics::SlurmSampler::in_controller_node(**store, provider));
  std::vector<std::string> node_statuses;
  for (auto s : controller::all_node_statuses()) node_statuses.push_back(controller::name(s));
  metrics::Collector collector({**store, node_gauges, api_stats, &slurm_sampler,
                                [&](const std::string& id) { return health.heartbeat_age(id); },
                                node_statuses});
  agents.set_node_gauges(&node_gauges);
  collector.add_family_writer(controller::training_families(**store));
  extras.metrics = [&] { return collector.render(); };
  extras.observe = [&](const std::string& action, int status, double seconds) {
    api_stats.observe(action, status, seconds);
  };
  server.set_extras(extras);

  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  if (auto s = server.start(config.port); !s) {
    log::error("{}", s.error().message);
    return 1;
  }
  if (config.agent_tls_port > 0) {
    auto files = tls::ensure_files(config.tls_dir(), tls::machine_names());
    Status serving = files ? server.start_tls(config.agent_tls_port, files->server_cert.string(),
                                              files->server_key.string())
                           : Status(files.error());
    if (!serving) {
      log::error("{}", serving.error().message);
      server.stop();
      return 1;
    }
    log::info("serving agents over TLS on port {} (CA {})", config.agent_tls_port,
              files->ca_cert.string());
  }
  // Written after the port is bound, so a reader that finds it can connect.
  if (!log::ok(fs::atomic_write_file(config.endpoint_path(), config.endpoint() + "\n", 0644),
               "endured")) {
    server.stop();
    return 1;
  }
  log::info("serving {} with state in {}", config.endpoint(), config.home.string());
  reconciler.start();
  slurm_sampler.start();
  health_watch.start();
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log::info("stopping; instances keep running and are adopted at the next start");
  server.stop();
  health_watch.stop();
  slurm_sampler.stop();
  reconciler.stop();
  return 0;
}
