#include "simulated_provider.h"

#include <fmt/format.h>

#include "api/node_contract.h"
#include "spec/layout.h"

namespace endure::bench {
namespace {

Error no_machine(const std::string& instance_id) {
  return make_error("NotFound", "no simulated machine " + instance_id);
}

}  // namespace

SimulatedProvider::SimulatedProvider(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_ / "off");
  log_ = std::fopen((dir_ / "machines.jsonl").c_str(), "a");
}

SimulatedProvider::~SimulatedProvider() {
  if (log_) std::fclose(log_);
}

void SimulatedProvider::record(const json& line) {
  if (!log_) return;
  std::string text = line.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), log_);
  std::fflush(log_);  // the generator tails the file
}

bool SimulatedProvider::powered_off(const std::string& instance_id) const {
  std::error_code ec;
  return std::filesystem::exists(dir_ / "off" / instance_id, ec);
}

int SimulatedProvider::pid_of(const Machine& m) const { return m.up ? 1'000'000 + m.boot : 0; }

Result<int> SimulatedProvider::claim_cluster_index(const std::string& cluster_id, int index) {
  std::lock_guard lock(mu_);
  if (auto it = indexes_.find(cluster_id); it != indexes_.end()) return it->second;
  if (index <= 0) {
    std::set<int> taken;
    for (const auto& [id, i] : indexes_) taken.insert(i);
    for (index = 1; taken.count(index); ++index) {
    }
  }
  if (index > spec::kMaxClusters) {
    return make_error("LimitExceeded", fmt::format("at most {} clusters", spec::kMaxClusters));
  }
  indexes_[cluster_id] = index;
  return index;
}

Status SimulatedProvider::prepare_cluster(const std::string&) { return {}; }

Result<int> SimulatedProvider::launch(const provider::LaunchRequest& request) {
  {
    std::lock_guard lock(mu_);
    auto& m = machines_[request.instance_id];
    if (m.up) return pid_of(m);  // idempotent: never two boots for one launch
    m.cluster_id = request.cluster_id;
    m.node_name = request.node_name;
    instances_of_[m.cluster_id].insert(request.instance_id);
    for (const auto& [path, content] : request.secret_files) {
      if (path == node::kAgentConfigPath) m.agent_config = json::parse(content, nullptr, false);
    }
    for (const auto& [path, content] : request.files) {
      if (path == node::kSlurmConfPath) slurm_[request.cluster_id].load_conf(content);
    }
  }
  return boot(request.instance_id);
}

Result<int> SimulatedProvider::boot(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = machines_.find(instance_id);
  if (it == machines_.end()) return no_machine(instance_id);
  Machine& m = it->second;
  std::error_code ec;
  std::filesystem::remove(dir_ / "off" / instance_id, ec);  // powered on again
  m.boot += 1;
  m.up = true;
  booted_.insert({m.cluster_id, m.node_name});
  slurm_[m.cluster_id].registered(m.node_name);
  record({{"Event", "Boot"},
          {"ClusterId", m.cluster_id},
          {"InstanceId", instance_id},
          {"NodeName", m.node_name},
          {"Boot", m.boot},
          {"AgentConfig", m.agent_config}});
  return pid_of(m);
}

Result<int> SimulatedProvider::reboot(const std::string&, const std::string& instance_id) {
  return boot(instance_id);
}

Result<int> SimulatedProvider::reimage(const std::string&, const std::string& instance_id) {
  return boot(instance_id);
}

bool SimulatedProvider::running(const std::string&, const std::string& instance_id) {
  // Powered off or not, as a host that stops answering: only a probe tells.
  std::lock_guard lock(mu_);
  auto it = machines_.find(instance_id);
  return it != machines_.end() && it->second.up;
}

provider::NodeProbe SimulatedProvider::probe(const std::string& cluster_id,
                                             const std::string& instance_id) {
  using provider::AgentState;
  using provider::MachineState;
  if (!running(cluster_id, instance_id)) {
    return {MachineState::kGone, AgentState::kGone, "simulated machine not booted"};
  }
  if (powered_off(instance_id)) {
    return {MachineState::kGone, AgentState::kGone, "simulated machine powered off"};
  }
  return {MachineState::kAlive, AgentState::kSleeping, "simulated machine on"};
}

Status SimulatedProvider::restart_agent(const std::string&, const std::string&) {
  return {};  // the generator's agent either heartbeats or its machine is off
}

int SimulatedProvider::pid(const std::string&, const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = machines_.find(instance_id);
  return it == machines_.end() ? 0 : pid_of(it->second);
}

Status SimulatedProvider::terminate(const std::string&, const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = machines_.find(instance_id);
  if (it == machines_.end() || !it->second.up) return {};
  Machine& gone = it->second;
  gone.up = false;
  bool another = false;  // a replacement already booted under the same name
  for (const auto& [id, m] : machines_) {
    another |= m.up && m.cluster_id == gone.cluster_id && m.node_name == gone.node_name;
  }
  if (!another) booted_.erase({gone.cluster_id, gone.node_name});
  slurm_[gone.cluster_id].machine_stopped();
  std::error_code ec;
  std::filesystem::remove(dir_ / "off" / instance_id, ec);
  record({{"Event", "Gone"}, {"InstanceId", instance_id}});
  return {};
}

Status SimulatedProvider::destroy(const std::string& cluster_id, const std::string& instance_id) {
  if (auto s = terminate(cluster_id, instance_id); !s) return s;
  std::lock_guard lock(mu_);
  if (auto it = machines_.find(instance_id); it != machines_.end()) {
    instances_of_[it->second.cluster_id].erase(instance_id);
    machines_.erase(it);
  }
  return {};
}

Status SimulatedProvider::write_file(const std::string& cluster_id, const std::string&,
                                     const std::string& path_in_node, const std::string& content) {
  if (path_in_node != node::kSlurmConfPath) return {};
  std::lock_guard lock(mu_);
  slurm_[cluster_id].load_conf(content);
  return {};
}

process::Output SimulatedProvider::exec(const std::string& cluster_id,
                                        const std::string& instance_id,
                                        const std::vector<std::string>& argv,
                                        std::chrono::milliseconds) {
  bool up = running(cluster_id, instance_id) && !powered_off(instance_id);
  std::lock_guard lock(mu_);
  return slurm_[cluster_id].run(argv, up, [&](const std::string& node_name) {
    return booted_.count({cluster_id, node_name}) > 0;
  });
}

std::filesystem::path SimulatedProvider::lifecycle_log(const std::string&,
                                                       const std::string& instance_id) {
  return dir_ / (instance_id + ".log");  // never written: no script runs
}

std::string SimulatedProvider::boot_diagnostics(const std::string&, const std::string&) {
  return "a simulated machine (bench/scale): no boot output";
}

std::vector<std::string> SimulatedProvider::instance_ids(const std::string& cluster_id) {
  std::lock_guard lock(mu_);
  auto it = instances_of_.find(cluster_id);
  if (it == instances_of_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

Status SimulatedProvider::remove_cluster(const std::string& cluster_id) {
  std::lock_guard lock(mu_);
  slurm_.erase(cluster_id);
  indexes_.erase(cluster_id);
  instances_of_.erase(cluster_id);
  return {};
}

Result<std::filesystem::path> SimulatedProvider::resolve_lifecycle_source(
    const std::string& field, const std::string& source_uri, const std::string&) {
  // No script runs on a simulated machine; the folder must still exist, as for a real one.
  std::string path = source_uri.rfind("file://", 0) == 0 ? source_uri.substr(7) : source_uri;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    return make_error("ValidationException",
                      field + ".SourceS3Uri: folder " + path + " does not exist");
  }
  return std::filesystem::path(path);
}

}  // namespace endure::bench
