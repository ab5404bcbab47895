// endured: the controller. Runs in the foreground (a daemon manager may supervise it; the
// system service is packaging/systemd/endured.service); state, token and endpoint live under
// --home (default $ENDURE_HOME, else ~/.endure).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>

#include "api/wire.h"
#include "common/command_line.h"
#include "common/log.h"
#include "common/system_paths.h"
#include "controller/core/config.h"
#include "controller/daemon.h"
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

// Where endure-agent, endure-fsx and endure-auto-resume are (bin/) and srun's plugin (lib/
// beside it): installed, under the prefix's lib/endure/node; built, beside endured.
std::filesystem::path node_software_bin(const std::filesystem::path& endured_dir) {
  auto installed = endured_dir / kInstalledNodeBin;
  if (std::filesystem::exists(installed / "endure-agent")) {
    return std::filesystem::canonical(installed);
  }
  return endured_dir;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endured: the endure cluster controller"};
  app.name("endured");
  std::string home, config_file;
  int port = 0;
  app.add_option("--home", home,
                 fmt::format("state folder: the database, token, endpoint and cluster files "
                             "(default: $ENDURE_HOME, else ~/.endure; the system service: {})",
                             kSystemHome))
      ->type_name("DIR");
  app.add_option("--config", config_file,
                 fmt::format("settings file, JSON (default: HOME/config.json; the system "
                             "service: {}); a missing file means every default",
                             kSystemConfigFile))
      ->type_name("FILE");
  app.add_option("--port", port,
                 "TCP port endured serves on at 127.0.0.1, 1-65535 (default: config.json's "
                 "Port, else 7117)")
      ->check(CLI::Range(1, 65535));
  std::string footer = "Settings in config.json (name: default, what it does):";
  for (const auto& s : controller::settings()) {
    footer += fmt::format("\n  {}: {}, {}", s.name, controller::default_text(s), s.doc);
  }
  app.footer(footer);
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [endured] [%l] %v");

  auto opened = controller::open_home(home.empty() ? default_home() : std::filesystem::path(home),
                                      port, config_file);
  if (!opened) {
    log::error("{}", opened.error().message);
    return opened.error().code == api::kValidationException ? 2 : 1;
  }
  controller::Config config = std::move(*opened);
  config.bin_dir = node_software_bin(std::filesystem::canonical("/proc/self/exe").parent_path());
  auto agent_path = config.bin_dir / "endure-agent";
  if (!std::filesystem::exists(agent_path)) {
    log::error("{} not found: endure-agent must sit beside endured (or, installed, in {})",
               agent_path.string(), kInstalledNodeBin);
    return 1;
  }
  if (geteuid() != 0) {
    log::error("endured needs root: local instances are Linux namespaces");
    return 1;
  }

  auto token = controller::load_or_create_token(config.token_path());
  if (!token) {
    log::error("{}", token.error().message);
    return 1;
  }
  auto store = store::Store::open(config.db_path().string());
  if (!store) {
    log::error("{}", store.error().message);
    return 1;
  }
  provider::LocalProvider local(config.clusters_dir(), agent_path, provider::kHostClusterIndexDir,
                                config.s3_overrides());
  provider::HostRegistry hosts(**store, provider::ssh_state_root(config.home));
  provider::HostProvider on_hosts(hosts, {config.bin_dir, config.bin_dir.parent_path() / "lib"},
                                  config.tls_dir() / "ca.pem", config.home / "hosts");
  provider::RoutedProvider provider(local, on_hosts);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  return controller::serve_until_stopped(config, *token, **store, provider, hosts, g_stop);
}
