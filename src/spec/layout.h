// Where a cluster's nodes live: hostnames, loopback addresses and ports, derived from the
// spec, the provisioning parameters and the cluster's index. Everything here is a pure
// function of those, so a restarted controller computes the same layout.
//
// Cluster c (1..kMaxClusters), group g (its position in the spec), slot s:
//   hostname  <group>-<s> (a node placed on a registered host: the host's; see place_on_hosts)
//             <group>-spare-<k> for the group's warm spare k (1..WarmSpares), in slot
//             kMaxInstancesPerGroup - k: declared to Slurm, in no partition
//   address   127.(100+c).g.(s+1)
//   slurmd    port kPortBase + (c-1)*kPortsPerCluster + 1 + g*kMaxInstancesPerGroup + s
//   slurmctld port kPortBase + (c-1)*kPortsPerCluster
// Ports stay below Linux's ephemeral range (32768+) so no client socket can take them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spec/cluster_spec.h"
#include "spec/instance_types.h"
#include "spec/provisioning.h"

namespace endure::spec {

inline constexpr int kMaxClusters = 12;
inline constexpr int kPortBase = 16000;
inline constexpr int kPortsPerCluster = 1 + kMaxInstanceGroups * kMaxInstancesPerGroup;

struct NodeSlot {
  std::string group;
  int group_index = 0;
  int slot = 0;
  std::string node_name;
  std::string hostname;  // the machine's own name: node_name, or the host it was placed on
  bool on_host = false;  // placed on a registered host (place_on_hosts)
  bool spare = false;    // a warm spare: booted and checked, swapped in for a failed worker
  std::string address;
  int slurmd_port = 0;
  NodeRole role = NodeRole::kWorker;
  std::string partition;  // worker groups only
  InstanceType type;
  int threads_per_core = 1;
};

struct ClusterLayout {
  std::string cluster_name;
  int index = 0;
  int slurmctld_port = 0;
  std::string controller_node;  // "" when the controller group has no instance
  std::string controller_address;
  std::string controller_hostname;
  std::vector<NodeSlot> nodes;  // every desired slot, by group then slot
  std::vector<std::string> partition_names;  // in worker_groups order, each once
  // Slot 0 of each worker group scaled to 0: Slurm 22.05 refuses a slurm.conf with no
  // node at all, so such a group keeps one node declared State=FUTURE (never launched).
  std::vector<NodeSlot> future_nodes;

  const NodeSlot* find(const std::string& node_name) const;
  // Every partition, in the order provisioning_parameters.json's worker_groups list them,
  // with its nodes (future_nodes included).
  std::vector<std::pair<std::string, std::vector<std::string>>> partitions() const;
};

std::string node_name(const std::string& group, int slot);
// The Slurm name of a group's warm spare k (1..WarmSpares).
std::string spare_node_name(const std::string& group, int k);

// removed_slots: {group: [slot, ...]} of nodes BatchDeleteClusterNodes took away; a group's
// InstanceCount slots are its lowest slot numbers not among them, so every other node keeps
// its name, address and port.
ClusterLayout make_layout(const ClusterSpec& spec, const ProvisioningParameters& params,
                          int cluster_index, const json& removed_slots = json::object());

// A node placed on a registered host: the Slurm NodeName stays the slot's, the machine is
// the host's (NodeHostname, NodeAddr).
struct HostPlacement {
  std::string hostname;
  std::string address;
};

// Moves the named nodes (by node name) onto their hosts; the others keep the local layout.
void place_on_hosts(ClusterLayout& layout, const std::map<std::string, HostPlacement>& by_node);

// A stored cluster, read back: its spec, its roles and its layout.
struct ClusterModel {
  ClusterSpec spec;
  ProvisioningParameters params;
  ClusterLayout layout;
};

// Parses a stored spec and provisioning parameters again; they were valid when stored.
Result<ClusterModel> load_cluster_model(const json& spec_json, const json& provisioning_json,
                                        int cluster_index,
                                        const json& removed_slots = json::object());

}  // namespace endure::spec
