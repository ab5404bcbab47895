#include "controller/daemon.h"

#include <chrono>
#include <thread>

#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/tls.h"
#include "console/console_files.h"
#include "controller/core/node_state.h"
#include "controller/front/api_server.h"
#include "controller/health/health_watch.h"
#include "controller/jobs/training_metrics.h"
#include "controller/metrics/collector.h"
#include "controller/reconciler.h"

namespace endure::controller {

Result<Config> open_home(const std::filesystem::path& home, int port,
                         const std::filesystem::path& config_file) {
  Config config;
  if (auto s = fs::make_dirs(home, 0700); !s) return s.error();
  config.home = std::filesystem::canonical(home);
  for (const auto& dir : {config.clusters_dir(), config.secrets_dir()}) {
    if (auto s = fs::make_dirs(dir, 0700); !s) return s.error();
  }
  auto file = config_file.empty() ? config.home / "config.json" : config_file;
  if (auto text = fs::read_file(file); text) {
    if (auto s = config.apply_json(json::parse(*text, nullptr, false)); !s) return s.error();
  } else if (text.error().code != "NotFound") {
    return text.error();
  }
  if (port) config.port = port;
  return config;
}

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

int serve_until_stopped(const Config& config, const std::string& token, store::Store& store,
                        provider::NodeProvider& provider, provider::HostRegistry& hosts,
                        const std::atomic<bool>& stop) {
  HealthMonitor health(ids::now_seconds);
  RecoveryManager recovery(store, provider, config, health);
  AutoResumeManager auto_resume(store, config, health);
  recovery.set_node_lost_hook([&](const store::ClusterRow& cluster, const std::string& node,
                                  const std::string& reason, const SlurmView& slurm,
                                  const std::vector<slurm::JobState>& jobs_before) {
    auto_resume.node_lost(cluster, node, reason, slurm, jobs_before);
  });
  DeepCheckManager deep_checks(store, provider, config, health);
  SoftwareUpdateManager software_updates(store, provider, config, health);
  Reconciler reconciler(store, provider, config, health, recovery, deep_checks, software_updates,
                        auto_resume, hosts);
  auto wake = [&] { reconciler.wake(); };
  HealthWatch health_watch(provider, config, health, wake);
  ClusterService clusters(store, provider, config, health, recovery, wake);
  FaultInjector faults(store, provider);
  AgentService agents(store, health, deep_checks, wake);
  HostService host_service(hosts);
  TrainingService training(store);
  // The key pairs the cloud service's clients sign with, beside the token.
  auto access_keys = AccessKeys::open(config.home / kAccessKeysFile);
  if (!access_keys) {
    log::error("{}", access_keys.error().message);
    return 1;
  }
  ApiRouter router({store, clusters, deep_checks, software_updates, faults, agents, auto_resume,
                    host_service, training, wake, [&] { return reconciler.passes(); },
                    access_keys->get()});
  ApiServer server(router, token, access_keys->get());
  HttpExtras extras;
  extras.console_file = console::file;
  // /metrics: rendered from the store, the agents' gauges, the API's calls and Slurm's
  // view, which a thread of its own samples (a scrape never runs a Slurm command).
  metrics::NodeGauges node_gauges;
  metrics::ApiStats api_stats;
  metrics::SlurmSampler slurm_sampler(store,
                                      metrics::SlurmSampler::in_controller_node(store, provider));
  std::vector<std::string> node_statuses;
  for (auto s : all_node_statuses()) node_statuses.push_back(name(s));
  metrics::Collector collector({store, node_gauges, api_stats, &slurm_sampler,
                                [&](const std::string& id) { return health.heartbeat_age(id); },
                                node_statuses});
  agents.set_node_gauges(&node_gauges);
  collector.add_family_writer(training_families(store));
  // Each commit is an fsync: the store's write rate is what grows with the fleet.
  collector.add_family_writer([&store](metrics::TextWriter& out) {
    out.family("endure_store_commits_total", "counter",
               "SQLite transactions endured committed since it started");
    out.sample("endure_store_commits_total", {}, static_cast<double>(store.commits()));
  });
  extras.metrics = [&] { return collector.render(); };
  extras.observe = [&](const std::string& action, int status, double seconds) {
    api_stats.observe(action, status, seconds);
  };
  server.set_extras(extras);

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
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log::info("stopping; instances keep running and are adopted at the next start");
  server.stop();
  health_watch.stop();
  slurm_sampler.stop();
  reconciler.stop();
  return 0;
}

}  // namespace endure::controller
