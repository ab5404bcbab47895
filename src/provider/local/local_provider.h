// The local provider: each instance is a set of Linux namespaces (pid, uts, mount) on this
// host, its first process is endure-agent (pid 1 inside), and terminating it kills its pid
// namespace, which takes every process in it.
//
// Layout under root (ENDURE_HOME/clusters):
//   <cluster_id>/fsx/                          the shared folder, /fsx in every node
//   <cluster_id>/instances/<instance_id>/
//       lock        held (flock) by the instance's processes for as long as any lives;
//                   taken by the launcher before the namespace is created, so that "is it
//                   running?" never depends on a pid that may have been reused
//       host.pid    host pid of the node's first process
//       boot.json   what local boot sets up: hostname and bind mounts
//       boot.log    the agent's own output
//       root/       bound over /etc/slurm, /etc/munge, /etc/hosts, /var/spool/slurm,
//                   /var/log/slurm, /run/slurm, /run/munge, /var/lib/munge,
//                   /var/log/munge, /opt/endure and /tmp inside the node
//       local/      the node's local disk, /local inside the node: a tmpfs of the
//                   instance type's size mounted here on the host, so that it outlives
//                   a reboot of the node and goes with the instance
//       kmsg        the node's kernel log, bound over /dev/kmsg inside the node
//   <cluster_id>/lifecycle-pins/               the s3:// lifecycle snapshot the cluster runs
//                                              per source (s3/lifecycle_cache.h)
#pragma once

#include <filesystem>
#include <memory>

#include "api/exec_target.h"
#include "api/node_files.h"
#include "provider/local/cluster_index_registry.h"
#include "provider/node_provider.h"
#include "s3/s3_config.h"

namespace endure::s3 {
class LifecycleSourceCache;
}  // namespace endure::s3

namespace endure::provider {

// Folders of the host that every node sees as its own (bound from root/<same path>).
const std::vector<std::string>& local_node_private_dirs();

// Boot description shared by the launcher and endure-agent --local-boot.
// boot.json's shape is api::LocalBoot (api/node_files.h): the agent reads it.
using LocalBoot = api::LocalBoot;

class LocalProvider : public NodeProvider, public FaultDrill {
 public:
  // root: the folder that holds every cluster's files; agent_path: the endure-agent binary;
  // index_dir: the host-wide folder of cluster indexes (see cluster_index_registry.h);
  // s3: endured's S3 settings, laid over the environment for s3:// lifecycle sources.
  LocalProvider(std::filesystem::path root, std::filesystem::path agent_path,
                std::filesystem::path index_dir = kHostClusterIndexDir,
                s3::ConfigOverrides s3 = {});
  ~LocalProvider() override;

  Result<int> claim_cluster_index(const std::string& cluster_id, int index) override;
  Status prepare_cluster(const std::string& cluster_id) override;
  Result<int> launch(const LaunchRequest& request) override;
  Result<int> reboot(const std::string& cluster_id, const std::string& instance_id) override;
  Result<int> reimage(const std::string& cluster_id, const std::string& instance_id) override;
  bool running(const std::string& cluster_id, const std::string& instance_id) override;
  int pid(const std::string& cluster_id, const std::string& instance_id) override;
  NodeProbe probe(const std::string& cluster_id, const std::string& instance_id) override;
  Status restart_agent(const std::string& cluster_id, const std::string& instance_id) override;
  Status rename(const std::string& cluster_id, const std::string& instance_id,
                const std::string& hostname) override;
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

  // Fault drills (local_fault_drill.cpp).
  Status freeze(const std::string& cluster_id, const std::string& instance_id) override;
  Status append_kernel_log(const std::string& cluster_id, const std::string& instance_id,
                           const std::string& message) override;
  Status fill_local_disk(const std::string& cluster_id, const std::string& instance_id) override;
  Status hang_shared_fs(const std::string& cluster_id, const std::string& instance_id) override;
  Status kill_slurmd(const std::string& cluster_id, const std::string& instance_id) override;

  std::filesystem::path cluster_dir(const std::string& cluster_id) const;
  std::filesystem::path instance_dir(const std::string& cluster_id,
                                     const std::string& instance_id) const;

 private:
  // Starts the node's first process from its boot.json, holding its lock (taken here).
  Result<int> boot(const std::string& cluster_id, const std::string& instance_id);
  // Host path of a file or folder inside the node.
  std::filesystem::path node_path(const std::string& cluster_id, const std::string& instance_id,
                                  const std::string& path_in_node) const;

  std::filesystem::path root_;
  std::filesystem::path agent_path_;
  ClusterIndexRegistry indexes_;
  // s3:// lifecycle sources: snapshots in root's parent folder, lifecycle-s3/ (shared by the
  // host provider, which resolves through this one).
  std::unique_ptr<s3::LifecycleSourceCache> s3_lifecycle_;
};

// A ProviderError naming what failed and errno's text.
Error local_io_error(const std::string& what);

}  // namespace endure::provider
