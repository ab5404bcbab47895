// endure-scale-endured: endured's own parts over the simulated-nodes provider, for
// bench/scale only. Every part that serves agents, judges silences and answers operators
// is endured's; only the machines under the nodes are records (simulated_provider.h).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>

#include "api/wire.h"
#include "common/command_line.h"
#include "common/log.h"
#include "controller/daemon.h"
#include "provider/host/host_registry.h"
#include "provider/host/ssh_client.h"
#include "simulated_provider.h"

using namespace endure;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "endure-scale-endured: endured over simulated machines (bench/scale only; no process is "
      "started for a node: a load generator plays their agents)"};
  app.name("endure-scale-endured");
  std::string home;
  int port = 0;
  app.add_option("--home", home, "state folder, made if missing (config.json read from it)")
      ->required();
  app.add_option("--port", port, "HTTP port on 127.0.0.1 (default: config.json's Port)")
      ->check(CLI::Range(1, 65535));
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [endure-scale-endured] [%l] %v");

  auto opened = controller::open_home(home, port);
  if (!opened) {
    log::error("{}", opened.error().message);
    return opened.error().code == api::kValidationException ? 2 : 1;
  }
  controller::Config config = std::move(*opened);
  config.bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  auto token = controller::load_or_create_token(config.token_path());
  auto store = store::Store::open(config.db_path().string());
  if (!token || !store) {
    log::error("{}", !token ? token.error().message : store.error().message);
    return 1;
  }
  bench::SimulatedProvider provider(config.home / "simulated");
  provider::HostRegistry hosts(**store, provider::ssh_state_root(config.home));
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  return controller::serve_until_stopped(config, *token, **store, provider, hosts, g_stop);
}
