// endure-memstore: a node's share of the cluster memory tier (TieredStorageConfig). The
// node's agent starts it when the cluster enables the tier and starts it again when it
// exits; what it holds lives in a tmpfs folder, so a restart keeps every whole object.
//
//   endure-memstore --address ADDR --arena DIR [--config PATH] [--port N]
//                   [--memory-mib N | --capacity-bytes N]
//
// Its room is InstanceMemoryAllocationPercentage of the node's memory (--memory-mib, else
// the kernel's MemTotal), or exactly --capacity-bytes. Its HTTP front listens on the port,
// its data path on the next one. Exit 0 after SIGTERM or SIGINT, 1
// when it cannot start, 2 on bad arguments.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <fstream>
#include <string>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/command_line.h"
#include "common/fs.h"
#include "common/log.h"
#include "memstore/arena.h"
#include "memstore/data_server.h"
#include "memstore/server.h"

namespace {

uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endure-memstore: this node's share of the cluster memory tier"};
  std::string address, arena_dir, config_path = endure::node::kMemoryStoreConfigPath;
  int port = -1, memory_mib = 0;
  uint64_t capacity = 0;
  app.add_option("--address", address, "the node's address to listen on")->required();
  app.add_option("--arena", arena_dir, "the tmpfs folder the objects live in")->required();
  app.add_option("--config", config_path, "memory_store.json (credential, share, port)");
  app.add_option("--port", port, "listen here instead of the config's port (0: any)")
      ->check(CLI::Range(0, 65535));
  auto* mib = app.add_option("--memory-mib", memory_mib, "the node's memory (default: MemTotal)")
                  ->check(CLI::Range(1, 1 << 30));
  app.add_option("--capacity-bytes", capacity, "the store's room, exactly")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX))
      ->excludes(mib);
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;

  auto text = endure::fs::read_file(config_path);
  if (!text) {
    std::fprintf(stderr, "endure-memstore: %s\n", text.error().message.c_str());
    return 1;
  }
  auto config = endure::api::MemoryStoreConfig::from_json(endure::json::parse(*text, nullptr, false));
  if (!config) {
    std::fprintf(stderr, "endure-memstore: %s\n", config.error().message.c_str());
    return 1;
  }
  if (config->memory_percent < 0 || config->memory_percent > 100 || config->token.empty()) {
    std::fprintf(stderr, "endure-memstore: %s: InstanceMemoryAllocationPercentage must be 0 to 100 "
                         "and Token not empty\n", config_path.c_str());
    return 1;
  }
  if (capacity == 0) {
    uint64_t memory = memory_mib > 0 ? uint64_t(memory_mib) << 20 : mem_total_bytes();
    capacity = memory / 100 * uint64_t(config->memory_percent);
  }

  auto arena = endure::memstore::Arena::open(arena_dir, capacity);
  if (!arena) {
    std::fprintf(stderr, "endure-memstore: %s\n", arena.error().message.c_str());
    return 1;
  }
  // The signals are waited for below, on this thread; every other thread leaves them alone.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  endure::memstore::StoreServer server(**arena, config->token);
  if (auto started = server.start(address, port >= 0 ? port : config->port); !started) {
    std::fprintf(stderr, "endure-memstore: %s\n", started.error().message.c_str());
    return 1;
  }
  // The data path on the next port (data_server.h).
  endure::memstore::DataServer data(**arena, config->token);
  if (auto started = data.start(address, server.port() + 1); !started) {
    std::fprintf(stderr, "endure-memstore: %s\n", started.error().message.c_str());
    return 1;
  }
  auto held = (*arena)->stats();
  endure::log::info("memory store of {} on {}:{}: {} bytes of room, {} held in {}", config->cluster_name,
                    address, server.port(), capacity, held.used_bytes, arena_dir);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  data.stop();
  server.stop();
  return 0;
}
