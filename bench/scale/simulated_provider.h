// The simulated-nodes provider, for bench/scale only: its machines are records, not
// processes, so that one endured can be measured against thousands of agents that a load
// generator plays with the real protocol. It is built into endure-scale-endured alone;
// endured and the specs a user writes cannot select it.
//
// It talks to the load generator through a folder:
//   machines.jsonl  one line per boot ({"Event":"Boot", ..., "AgentConfig": the agent's
//                   config file}) and per termination ({"Event":"Gone","InstanceId":...})
//   off/<id>        written by the generator: the machine lost power. Only a probe reads
//                   it, as a BMC or a cloud's API answers for a silent machine.
// Each cluster's Slurm is a SimulatedSlurm; a node is registered while its machine is
// booted.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "provider/node_provider.h"
#include "simulated_slurm.h"

namespace endure::bench {

class SimulatedProvider : public provider::NodeProvider {
 public:
  explicit SimulatedProvider(std::filesystem::path dir);
  ~SimulatedProvider() override;

  Result<int> claim_cluster_index(const std::string& cluster_id, int index) override;
  Status prepare_cluster(const std::string& cluster_id) override;
  Result<int> launch(const provider::LaunchRequest& request) override;
  Result<int> reboot(const std::string& cluster_id, const std::string& instance_id) override;
  Result<int> reimage(const std::string& cluster_id, const std::string& instance_id) override;
  bool running(const std::string& cluster_id, const std::string& instance_id) override;
  provider::NodeProbe probe(const std::string& cluster_id, const std::string& instance_id) override;
  Status restart_agent(const std::string& cluster_id, const std::string& instance_id) override;
  int pid(const std::string& cluster_id, const std::string& instance_id) override;
  Status terminate(const std::string& cluster_id, const std::string& instance_id) override;
  Status destroy(const std::string& cluster_id, const std::string& instance_id) override;
  Status write_file(const std::string& cluster_id, const std::string& instance_id,
                    const std::string& path_in_node, const std::string& content) override;
  process::Output exec(const std::string& cluster_id, const std::string& instance_id,
                       const std::vector<std::string>& argv,
                       std::chrono::milliseconds timeout) override;
  std::filesystem::path lifecycle_log(const std::string& cluster_id,
                                      const std::string& instance_id) override;
  std::string boot_diagnostics(const std::string& cluster_id,
                               const std::string& instance_id) override;
  std::vector<std::string> instance_ids(const std::string& cluster_id) override;
  Status remove_cluster(const std::string& cluster_id) override;
  Result<std::filesystem::path> resolve_lifecycle_source(const std::string& field,
                                                         const std::string& source_uri,
                                                         const std::string& on_create) override;

 private:
  struct Machine {
    std::string cluster_id;
    std::string node_name;
    json agent_config;
    int boot = 0;     // boots so far; the "pid" endured stores is derived from it
    bool up = false;  // booted and not terminated
  };

  // Boots the machine again (same id): a Boot record for the generator.
  Result<int> boot(const std::string& instance_id);
  // A pid-like number for a boot: no process has it, endured only stores it.
  int pid_of(const Machine& m) const;
  bool powered_off(const std::string& instance_id) const;
  void record(const json& line);

  std::filesystem::path dir_;
  std::FILE* log_ = nullptr;
  std::mutex mu_;
  // Hashed: endured asks after thousands of machines ten times a second, and what the
  // bench measures is endured, not this provider.
  std::unordered_map<std::string, Machine> machines_;          // by instance id
  std::map<std::string, std::set<std::string>> instances_of_;  // cluster id -> ids
  std::map<std::string, int> indexes_;                         // cluster id -> its index
  std::map<std::string, SimulatedSlurm> slurm_;                // by cluster id
  std::set<std::pair<std::string, std::string>> booted_;       // (cluster id, node name)
};

}  // namespace endure::bench
