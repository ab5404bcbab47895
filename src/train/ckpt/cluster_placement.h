// Where the cluster memory tier keeps a rank's copies: its own node's store and K peers'.
// A replica on the rank's own node would die with it, so it never goes there; replicas
// spread over instance groups and racks where the cluster says which, so that one group's
// or rack's loss leaves a copy elsewhere.
#pragma once

#include <string>
#include <vector>

namespace endure::ckpt {

// A node of the job, as the cluster describes it (resource_config.json): its Slurm name,
// its instance group and its rack ("" when the cluster names none).
struct StoreNode {
  std::string name;
  std::string group;
  std::string rack;
};

// The nodes that hold the replicas of a rank running on `own`, k of them (fewer when the
// job has fewer other nodes). Each pick is a node not picked yet whose group, then rack,
// holds none of the copies so far. When every node is alike, it is the next one after
// `own` in name order: a ring, where each store holds its predecessor's replicas, as many
// as it gives. When only some are preferred (another group's), own's place among its
// group's nodes chooses among them, so that a group's replicas spread over the other
// group's stores. Deterministic: a restore finds any rank's copies by computing the same.
std::vector<std::string> replica_nodes(const std::vector<StoreNode>& nodes, const std::string& own,
                                       int k);

}  // namespace endure::ckpt
