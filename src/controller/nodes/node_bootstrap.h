// What a new node gets at boot: the files endured writes into it (Slurm's, the agent's
// config, the resource config its lifecycle scripts read, the auto-resume config, the
// memory store's config when the cluster has the tier, the munge key), assembled into the
// provider's launch request. Pure: no store, no provider.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/node_files.h"
#include "controller/core/config.h"
#include "provider/node_provider.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// The cluster-wide parts, made once per pass that launches a node.
struct NodeFiles {
  std::string slurm_conf;
  std::string hosts;
  std::string munge_key;
  std::string auto_resume_token;
  std::string memory_store_token;  // empty: the cluster's memory tier is off
  // The cluster's key for its SharedFileSystem and the server's known_hosts line (empty:
  // a cluster without one).
  std::string fsx_key;
  std::string fsx_known_hosts;
};

// Where a node reaches endured: a local node over loopback HTTP (url empty: the config's
// endpoint), a node on a host over TLS with endured's CA at ca_file in the node.
struct NodeEndpoint {
  std::string url;
  std::string ca_file;
};

// Every node's memory_store.json (node::kMemoryStoreConfigPath) for the cluster's memory
// tier; nullopt when the tier is off, and then the node has none.
std::optional<api::MemoryStoreConfig> memory_store_config(const std::string& cluster_name,
                                                          const spec::ClusterSpec& spec,
                                                          const std::string& token);

// The live (not terminated) instance of a slot among rows, or null.
const store::InstanceRow* live_in_slot(const std::vector<store::InstanceRow>& rows,
                                       const std::string& node_name);

// The resource config every lifecycle script gets, in the spirit of the cloud service's
// resource_config.json: the cluster, its groups, every instance's name, address and role,
// and the SharedFileSystem the lifecycle scripts mount at /fsx, with the node's paths of
// its key and known_hosts.
json resource_config(const store::ClusterRow& cluster, const spec::ClusterModel& model,
                     const std::vector<store::InstanceRow>& rows);

// The launch request of instance `row` in `slot`: every file of the node contract
// (api/node_contract.h) that endured writes. The lifecycle source is the caller's to set.
provider::LaunchRequest launch_request(const Config& config, const store::ClusterRow& cluster,
                                       const spec::ClusterModel& model, const spec::NodeSlot& slot,
                                       const spec::InstanceGroupSpec& group,
                                       const store::InstanceRow& row,
                                       const std::vector<store::InstanceRow>& rows,
                                       const NodeFiles& files, const NodeEndpoint& endpoint = {});

}  // namespace endure::controller
