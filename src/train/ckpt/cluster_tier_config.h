// What a rank needs to use the cluster memory tier, from the files every node of a cluster
// with the tier on has (api/node_contract.h): the cluster's credential and the stores' port
// (memory_store.json), and the job's nodes with their groups and addresses
// (resource_config.json).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "train/ckpt/cluster_placement.h"
#include "train/ckpt/cluster_store.h"

namespace endure::ckpt {

struct ClusterTierConfig {
  std::string cluster_name;
  std::string token;
  std::string own_node;
  std::vector<StoreNode> nodes;                // the job's nodes, as placement sees them
  std::map<std::string, StoreAddress> stores;  // each of them's store
};

struct ClusterTierFiles {
  std::filesystem::path memory_store;     // memory_store.json
  std::filesystem::path resource_config;  // resource_config.json
  // The node's hosts file (optional): a node's address is the one it names, as for Slurm
  // and the ranks' communicator; resource_config.json keeps each node's address at its
  // launch, and a replacement (a warm spare) may have moved the node since.
  std::filesystem::path hosts;
  static ClusterTierFiles node();  // where a node has them
};

// The tier for a rank on own_node of a job on job_nodes (empty: every instance the
// cluster lists). "TierOff" when the node has no memory_store.json (the cluster does not
// enable the tier); InvalidConfig naming the file and the field when a file is not what it
// should be, or a node of the job is not in the cluster.
Result<ClusterTierConfig> load_cluster_tier(const std::string& own_node,
                                            const std::vector<std::string>& job_nodes,
                                            const ClusterTierFiles& files = ClusterTierFiles::node());

}  // namespace endure::ckpt
