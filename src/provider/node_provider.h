// A node provider creates, reboots, terminates and enters instances: provisioning only.
// The local provider (provider/local/) is the embedded default; a static host pool or a
// cloud fits the same interface. Fault drills are a separate, optional interface.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/process.h"
#include "common/result.h"
#include "provider/fault_drill.h"
#include "provider/node_probe.h"

namespace endure::provider {

// Everything an instance needs at boot. Files are written into the instance before its
// first process starts.
struct LaunchRequest {
  std::string cluster_id;
  std::string instance_id;
  std::string node_name;                   // hostname and Slurm NodeName
  std::filesystem::path lifecycle_source;  // the group's LifeCycleConfig folder (local)
  int local_disk_mib = 1024;               // size of the node's local disk
  // Files to place in the node, by absolute path inside it ("/etc/slurm/slurm.conf").
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, std::string>> secret_files;  // written mode 0600
  // A registered host claimed for the instance (provider/host/): the host provider makes
  // it the node. Empty: a local node.
  std::string host_name;
};

class NodeProvider {
 public:
  virtual ~NodeProvider() = default;

  // Claims the cluster's index, which picks its loopback addresses and Slurm ports
  // (spec/layout.h), host-wide: clusters of two controllers on one host never share one.
  // index > 0: that index (a stored cluster keeps its own); 0: the one the cluster already
  // holds, else the smallest free. Idempotent; remove_cluster gives the index back.
  virtual Result<int> claim_cluster_index(const std::string& cluster_id, int index) = 0;

  // Makes the cluster's shared folder (mounted at /fsx in every node). Idempotent.
  virtual Status prepare_cluster(const std::string& cluster_id) = 0;

  // Starts the instance, or adopts it when it is already running (after a controller
  // restart), and returns its host pid. Idempotent for an instance id: never starts two.
  virtual Result<int> launch(const LaunchRequest& request) = 0;

  // Stops every process of the instance and boots it again: same instance id, its files
  // and local disk kept, the lifecycle script not run again. Returns the new host pid.
  virtual Result<int> reboot(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Stops every process of the instance and boots it again on fresh software, what a new
  // root volume is: same instance id, its local disk and endured's files kept, but the
  // lifecycle scripts' outcome and the boot scripts they installed gone, so OnCreate runs
  // again (UpdateClusterSoftware). Returns the new host pid.
  virtual Result<int> reimage(const std::string& cluster_id, const std::string& instance_id) = 0;

  // True while any process of the instance exists.
  virtual bool running(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Looks at the instance's processes from outside, without its agent, within a bounded
  // time: gone, every one stopped (hung), or alive; and its agent's state.
  virtual NodeProbe probe(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Starts the instance's agent again (its init, or the host's service manager, does it);
  // the node and its other processes stay as they are.
  virtual Status restart_agent(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Host pid of the instance's first process, 0 when it is not running.
  virtual int pid(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Kills every process of the instance and waits until none is left. Keeps its files.
  virtual Status terminate(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Terminates and then removes the instance's files (its local disk included).
  virtual Status destroy(const std::string& cluster_id, const std::string& instance_id) = 0;

  // Writes a file inside a (running or stopped) instance, atomically.
  virtual Status write_file(const std::string& cluster_id, const std::string& instance_id,
                            const std::string& path_in_node, const std::string& content) = 0;

  // Runs argv inside the instance (its mount, uts and pid namespaces).
  virtual process::Output exec(const std::string& cluster_id, const std::string& instance_id,
                               const std::vector<std::string>& argv,
                               std::chrono::milliseconds timeout) = 0;

  // Host path of the instance's lifecycle-script log.
  virtual std::filesystem::path lifecycle_log(const std::string& cluster_id,
                                              const std::string& instance_id) = 0;

  // A few lines on why an instance stopped (its boot output), for failure messages.
  virtual std::string boot_diagnostics(const std::string& cluster_id,
                                       const std::string& instance_id) = 0;

  // Instance ids that have files here (running or not), for sweeping orphans.
  virtual std::vector<std::string> instance_ids(const std::string& cluster_id) = 0;

  // Removes the cluster's files and gives its index back; every instance must be destroyed
  // first.
  virtual Status remove_cluster(const std::string& cluster_id) = 0;

  // Checks that a LifeCycleConfig source can be used here and returns its local folder.
  // field is the spec path to name in the error ("InstanceGroups[0].LifeCycleConfig").
  virtual Result<std::filesystem::path> resolve_lifecycle_source(const std::string& field,
                                                                 const std::string& source_uri,
                                                                 const std::string& on_create) = 0;

  // The node is replaced for a fault: the machine under it is set aside with the reason
  // (a registered host is Quarantined). Nothing to do where machines are not reused.
  virtual Status set_aside(const std::string& /*cluster_id*/, const std::string& /*instance_id*/,
                           const std::string& /*reason*/) {
    return {};
  }

  // A warm spare swapped in under another Slurm name: where a machine's hostname is its Slurm
  // name (a local node), the machine takes the new name, now and at every boot. Nothing to do
  // where machines keep their own names (a registered host).
  virtual Status rename(const std::string& /*cluster_id*/, const std::string& /*instance_id*/,
                        const std::string& /*hostname*/) {
    return {};
  }

  // The provider's fault drills (provider/fault_drill.h), or null when it has none.
  virtual FaultDrill* fault_drill() { return nullptr; }
};

}  // namespace endure::provider
