// endured's one provider, made of two: a node on a registered host goes to the host
// provider, every other node to the local one. A launch names its host (or not); after
// that, the host registry knows which instances are on hosts. Cluster-wide parts (the
// cluster's index, its folder, lifecycle sources) are the local provider's.
#pragma once

#include "provider/host/host_provider.h"
#include "provider/local/local_provider.h"

namespace endure::provider {

class RoutedProvider : public NodeProvider, public FaultDrill {
 public:
  RoutedProvider(LocalProvider& local, HostProvider& hosts) : local_(local), hosts_(hosts) {}

  // A host under the node is set aside with the reason (a local node's machine is this
  // one: nothing to set aside).
  Status set_aside(const std::string& cluster_id, const std::string& instance_id,
                   const std::string& reason) override;
  Status rename(const std::string& cluster_id, const std::string& instance_id,
                const std::string& hostname) override;
  // Whether the instance is on a registered host.
  bool on_host(const std::string& cluster_id, const std::string& instance_id) {
    return hosts_.holds(cluster_id, instance_id);
  }

  Result<int> claim_cluster_index(const std::string& cluster_id, int index) override;
  Status prepare_cluster(const std::string& cluster_id) override;
  Result<int> launch(const LaunchRequest& request) override;
  Result<int> reboot(const std::string& cluster_id, const std::string& instance_id) override;
  Result<int> reimage(const std::string& cluster_id, const std::string& instance_id) override;
  bool running(const std::string& cluster_id, const std::string& instance_id) override;
  NodeProbe probe(const std::string& cluster_id, const std::string& instance_id) override;
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
  FaultDrill* fault_drill() override { return this; }

  // Fault drills are the local provider's: hosts the user owns get none.
  Status freeze(const std::string& cluster_id, const std::string& instance_id) override;
  Status append_kernel_log(const std::string& cluster_id, const std::string& instance_id,
                           const std::string& message) override;
  Status fill_local_disk(const std::string& cluster_id, const std::string& instance_id) override;
  Status hang_shared_fs(const std::string& cluster_id, const std::string& instance_id) override;
  Status kill_slurmd(const std::string& cluster_id, const std::string& instance_id) override;

 private:
  NodeProvider& of(const std::string& cluster_id, const std::string& instance_id) {
    return hosts_.holds(cluster_id, instance_id) ? static_cast<NodeProvider&>(hosts_) : local_;
  }
  // The local drill, or an error for a node on a host.
  Result<FaultDrill*> drill(const std::string& cluster_id, const std::string& instance_id);

  LocalProvider& local_;
  HostProvider& hosts_;
};

}  // namespace endure::provider
