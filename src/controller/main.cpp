// endured: the controller. Runs in the foreground (a daemon manager may supervise it);
// state, token and endpoint live under $ENDURE_HOME (default ~/.endure).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>

#include "api/wire.h"
#include "common/command_line.h"
#include "common/log.h"
#include "controller/config.h"
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

  auto opened =
      controller::open_home(home.empty() ? default_home() : std::filesystem::path(home), port);
  if (!opened) {
    log::error("{}", opened.error().message);
    return opened.error().code == api::kValidationException ? 2 : 1;
  }
  controller::Config config = std::move(*opened);
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
  provider::LocalProvider local(config.clusters_dir(), agent_path);
  provider::HostRegistry hosts(**store, provider::ssh_state_root(config.home));
  provider::HostProvider on_hosts(hosts, {config.bin_dir, config.bin_dir.parent_path() / "lib"},
                                  config.tls_dir() / "ca.pem", config.home / "hosts");
  provider::RoutedProvider provider(local, on_hosts);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  return controller::serve_until_stopped(config, *token, **store, provider, hosts, g_stop);
}
