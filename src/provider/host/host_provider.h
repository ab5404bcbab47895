// The host provider: nodes on machines the user registered (host_registry.h), reached only
// over SSH. The controller claims a host for an instance (HostRegistry::claim) and names it
// in the launch request; launching checks the host and bootstraps it (host_bootstrap.h).
// The instance "runs" while endure's agent service lives on its host, or, once in service,
// while its host is not known to be without it (a host that does not answer may be hung:
// its silence is judged as a hang and the power command answers it).
//
// A host that fails its checks or its bootstrap, or does not answer when its node is
// stopped, is set aside (Quarantined) with the reason; a node replaced for a fault sets its
// host aside with the verdict (set_aside). A node removed in good order leaves its host
// clean and Available.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "provider/host/host_bootstrap.h"
#include "provider/host/host_registry.h"
#include "provider/node_provider.h"

namespace endure::provider {

class HostProvider : public NodeProvider {
 public:
  // ca_file: endured's CA (tls.h), given to every host; cache_root: where copies of the
  // hosts' lifecycle logs are kept on this machine.
  HostProvider(HostRegistry& hosts, NodeSoftware software, std::filesystem::path ca_file,
               std::filesystem::path cache_root);

  // Whether an instance is (or was) on a registered host: its host holds it.
  bool holds(const std::string& cluster_id, const std::string& instance_id);
  // The node is replaced for a fault: its host is set aside (Quarantined) with the reason,
  // and cleaned when it answers.
  Status set_aside(const std::string& cluster_id, const std::string& instance_id,
                   const std::string& reason) override;

  // Clusters live on endured's machine (their index, lifecycle folders): the local
  // provider's part. These three do nothing here.
  Result<int> claim_cluster_index(const std::string&, int index) override { return index; }
  Status prepare_cluster(const std::string&) override { return {}; }
  Status remove_cluster(const std::string& cluster_id) override;

  Result<int> launch(const LaunchRequest& request) override;
  Result<int> reboot(const std::string& cluster_id, const std::string& instance_id) override;
  Result<int> reimage(const std::string& cluster_id, const std::string& instance_id) override;
  bool running(const std::string& cluster_id, const std::string& instance_id) override;
  NodeProbe probe(const std::string& cluster_id, const std::string& instance_id) override;
  Status restart_agent(const std::string& cluster_id, const std::string& instance_id) override;
  // The agent's pid on its host: nothing to enter from here (endure exec refuses hosts).
  int pid(const std::string& cluster_id, const std::string& instance_id) override;
  Status terminate(const std::string& cluster_id, const std::string& instance_id) override;
  Status destroy(const std::string& cluster_id, const std::string& instance_id) override;
  Status write_file(const std::string& cluster_id, const std::string& instance_id,
                    const std::string& path_in_node, const std::string& content) override;
  process::Output exec(const std::string& cluster_id, const std::string& instance_id,
                       const std::vector<std::string>& argv,
                       std::chrono::milliseconds timeout) override;
  // A copy of the host's lifecycle log, fetched over SSH when the host answers.
  std::filesystem::path lifecycle_log(const std::string& cluster_id,
                                      const std::string& instance_id) override;
  std::string boot_diagnostics(const std::string& cluster_id,
                               const std::string& instance_id) override;
  std::vector<std::string> instance_ids(const std::string& cluster_id) override;
  Result<std::filesystem::path> resolve_lifecycle_source(const std::string& field,
                                                         const std::string& source_uri,
                                                         const std::string& on_create) override;

 private:
  // A client for the host, its key recorded (checked against the registration) on first use.
  SshClient reach(const HostRecord& host);
  Result<HostRecord> host_for(const std::string& cluster_id, const std::string& instance_id);
  // Stops what endure runs on the instance's host and removes its files; the host is then
  // Available (released) or, when it does not answer, Quarantined.
  Status release(const std::string& cluster_id, const std::string& instance_id);
  Status quarantine(const HostRecord& host, const std::string& reason);

  HostRegistry& hosts_;
  NodeSoftware software_;
  std::filesystem::path ca_file_;
  std::filesystem::path cache_root_;

  // running() is asked ten times a second per node: its answer is kept for a second.
  struct Seen {
    std::chrono::steady_clock::time_point at;
    bool running = false;
  };
  std::mutex seen_mu_;
  std::map<std::string, Seen> seen_;
};

}  // namespace endure::provider
