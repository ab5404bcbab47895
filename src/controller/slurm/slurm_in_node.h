// A Slurm client whose commands run inside one node, through the provider: the controller
// node for slurmctld's view, any node for its own slurmd; and what one reconcile pass saw
// of Slurm through it.
#pragma once

#include <map>
#include <string>

#include "api/node_contract.h"
#include "common/log.h"
#include "provider/node_provider.h"
#include "slurm/slurm_client.h"

namespace endure::controller {

// What a reconcile pass knows of Slurm: a client into the controller node (when it
// runs) and the node states it reported (empty when it could not be asked).
struct SlurmView {
  const slurm::SlurmClient* client = nullptr;
  std::map<std::string, slurm::NodeState> nodes;
};

inline slurm::SlurmClient slurm_in_node(provider::NodeProvider& provider,
                                        const std::string& cluster_id,
                                        const std::string& instance_id) {
  return slurm::SlurmClient(
      [&provider, cluster_id, instance_id](const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout) {
        return provider.exec(cluster_id, instance_id, argv, timeout);
      });
}

// Makes the node's slurmd register with slurmctld now, not at slurmctld's next ping (a
// second or more, during which Slurm takes the node as not responding): SIGHUP makes it
// re-read its files and register. A failure is logged.
inline void register_slurmd_now(provider::NodeProvider& provider, const std::string& cluster_id,
                                const std::string& instance_id, const std::string& node_name) {
  auto hup =
      provider.exec(cluster_id, instance_id,
                    {"sh", "-c", std::string("kill -HUP \"$(cat ") + node::kSlurmdPidFile + ")\""},
                    std::chrono::seconds(5));
  if (hup.exit_code != 0) log::warn("{}: signal slurmd: {}", node_name, hup.err);
}

}  // namespace endure::controller
