// A Slurm client whose commands run inside one node, through the provider: the controller
// node for slurmctld's view, any node for its own slurmd.
#pragma once

#include <string>

#include "provider/node_provider.h"
#include "slurm/slurm_client.h"

namespace endure::controller {

inline slurm::SlurmClient slurm_in_node(provider::NodeProvider& provider,
                                        const std::string& cluster_id,
                                        const std::string& instance_id) {
  return slurm::SlurmClient(
      [&provider, cluster_id, instance_id](const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout) {
        return provider.exec(cluster_id, instance_id, argv, timeout);
      });
}

}  // namespace endure::controller
