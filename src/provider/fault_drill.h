// Fault drills: real faults made on a real node, through the sources detection reads (its
// processes, its kernel log, its disks, its daemons). Optional: a provider that cannot
// make them (hosts the user owns) returns no drill, and the drills are refused.
#pragma once

#include <string>

#include "common/result.h"

namespace endure::provider {

class FaultDrill {
 public:
  virtual ~FaultDrill() = default;

  // Stops (SIGSTOP) every process of the instance: a hung machine.
  virtual Status freeze(const std::string& cluster_id, const std::string& instance_id) = 0;
  // Appends a message to the node's kernel log, in the kernel's own record format.
  virtual Status append_kernel_log(const std::string& cluster_id, const std::string& instance_id,
                                   const std::string& message) = 0;
  // Fills the node's local disk.
  virtual Status fill_local_disk(const std::string& cluster_id, const std::string& instance_id) = 0;
  // Stops the node's /fsx server: every call on /fsx in that node blocks, as on a hung
  // network file system, while the other nodes' /fsx goes on.
  virtual Status hang_shared_fs(const std::string& cluster_id, const std::string& instance_id) = 0;
  // Kills the node's slurmd (SIGKILL): the machine is fine, its Slurm daemon is gone.
  virtual Status kill_slurmd(const std::string& cluster_id, const std::string& instance_id) = 0;
};

}  // namespace endure::provider
