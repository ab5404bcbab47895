#include "agent/memory_store.h"

#include <httplib.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "api/node_contract.h"
#include "api/node_gauges.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/process.h"

namespace endure::agent {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPidFile = "/opt/endure/memstore.pid";
constexpr auto kRestartPause = 1s;

// This node's address, as the cluster lists it (resource_config.json).
std::string own_address(const std::string& node_name) {
  auto text = fs::read_file(node::kResourceConfigPath);
  if (!text) return "";
  json config = json::parse(*text, nullptr, false);
  if (!config.is_object()) return "";
  for (const auto& group : config.value("InstanceGroups", json::array()))
    for (const auto& inst : group.value("Instances", json::array()))
      if (inst.value("InstanceName", "") == node_name) return inst.value("CustomerIpAddress", "");
  return "";
}

}  // namespace

std::string MemoryStoreSupervisor::arena_of(const std::string& instance_id) {
  return node::kMemoryStoreArenaPrefix + instance_id;
}

std::string MemoryStoreSupervisor::address_now() const {
  std::string name = config_.node_name;
  if (auto text = fs::read_file(config_path_)) {
    auto now = api::AgentConfig::from_json(json::parse(*text, nullptr, false));
    if (now) name = now->node_name;
  }
  auto hosts = api::hosts_ipv4(node::kHostsPath);
  if (auto it = hosts.find(name); it != hosts.end()) return it->second;
  return own_address(name);
}

void MemoryStoreSupervisor::gauges(json& out) const {
  auto text = fs::read_file(node::kMemoryStoreConfigPath);
  if (!text) return;
  auto config = api::MemoryStoreConfig::from_json(json::parse(*text, nullptr, false));
  std::string address;
  {
    std::lock_guard lock(mu_);
    address = address_;
  }
  if (!config || address.empty()) return;
  httplib::Client client(address, config->port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(1, 0);
  client.set_bearer_token_auth(config->token);
  auto r = client.Get("/v1/stats");
  if (!r || r->status != 200) return;
  json stats = json::parse(r->body, nullptr, false);
  if (!stats.is_object()) return;
  namespace g = api::gauge;
  for (auto [key, field] : {std::pair{g::kMemStoreCapacityBytes, "CapacityBytes"},
                            {g::kMemStoreUsedBytes, "UsedBytes"},
                            {g::kMemStorePutBytes, "PutBytes"},
                            {g::kMemStoreGetBytes, "GetBytes"},
                            {g::kMemStoreRefusedPuts, "RefusedPuts"},
                            {g::kMemStoreEvictedSteps, "EvictedSteps"},
                            {g::kMemStoreShardGets, "ShardGets"},
                            {g::kMemStoreReplicationLagSeconds, "ReplicationLagSeconds"},
                            {g::kMemStoreLastCommitSeconds, "LastCommitSeconds"}})
    if (stats.contains(field) && stats[field].is_number()) out[key] = stats[field].get<double>();
}

MemoryStoreSupervisor::MemoryStoreSupervisor(const api::AgentConfig& config, std::string config_path)
    : config_(config), config_path_(std::move(config_path)) {
  // A store an earlier agent of this boot started (we were restarted) holds the port: ours,
  // by its pid file, so it is stopped and ours started; what it held stays in the arena.
  if (auto text = fs::read_file(kPidFile)) {
    int pid = std::atoi(text->c_str());
    if (pid > 1 && process::alive(pid)) {
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 50 && process::alive(pid); ++i) std::this_thread::sleep_for(100ms);
    }
    std::error_code ec;
    std::filesystem::remove(kPidFile, ec);
  }
}

MemoryStoreSupervisor::~MemoryStoreSupervisor() { stop(); }

void MemoryStoreSupervisor::tick() {
  auto text = fs::read_file(node::kMemoryStoreConfigPath);
  if (!text) return stop();
  // A new share or credential, or a new address: the store starts again with it; what it
  // holds stays in the arena (a smaller share evicts down to it).
  const std::string address = address_now();
  std::string running;
  {
    std::lock_guard lock(mu_);
    running = address_;
  }
  if (pid_ != 0 && (*text != started_with_ || address != running)) {
    log::info("memory store: {}: starting the store again",
              *text != started_with_ ? std::string(node::kMemoryStoreConfigPath) + " changed"
                                     : "the node's address is now " + address);
    stop();
    next_start_ = {};
  }
  if (pid_ == 0 && std::chrono::steady_clock::now() >= next_start_) {
    started_with_ = *text;
    start(address);
  }
}

void MemoryStoreSupervisor::exited(int pid, int status) {
  if (pid != pid_ || pid_ == 0) return;
  log::warn("memory store (pid {}) ended ({}); starting it again in {} s", pid,
            WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                : "exit " + std::to_string(WEXITSTATUS(status)),
            std::chrono::duration<double>(kRestartPause).count());
  pid_ = 0;
  next_start_ = std::chrono::steady_clock::now() + kRestartPause;
}

void MemoryStoreSupervisor::start(const std::string& address) {
  next_start_ = std::chrono::steady_clock::now() + kRestartPause;
  if (address.empty()) {
    log::warn("memory store: this node is in neither {} nor {}: not started", node::kHostsPath,
              node::kResourceConfigPath);
    return;
  }
  // The node's own copy (node::kBinDir): the path this agent was started from may be one
  // the node cannot see (a build under the host's /tmp, which a local node has its own of).
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::path(node::kBinDir) / "endure-memstore";
  if (!std::filesystem::exists(exe, ec))
    exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "endure-memstore";
  std::vector<std::string> args = {exe.string(), "--address", address, "--arena",
                                   arena_of(config_.instance_id)};
  if (config_.memory_mib > 0)
    args.insert(args.end(), {"--memory-mib", std::to_string(config_.memory_mib)});
  pid_t pid = ::fork();
  if (pid < 0) {
    log::warn("memory store: fork: {}", std::strerror(errno));
    return;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  {
    std::lock_guard lock(mu_);
    address_ = address;
  }
  log::ok(fs::atomic_write_file(kPidFile, std::to_string(pid) + "\n"),
          "save the memory store's pid");
  log::info("memory store: started pid {} on {}", pid, address);
}

void MemoryStoreSupervisor::stop() {
  if (pid_ == 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 50; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(100ms);
  }
  if (process::alive(pid_)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = 0;
  {
    std::lock_guard lock(mu_);
    address_.clear();
  }
  std::error_code ec;
  std::filesystem::remove(kPidFile, ec);
}

}  // namespace endure::agent
