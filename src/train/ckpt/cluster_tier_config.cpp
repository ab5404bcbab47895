#include "train/ckpt/cluster_tier_config.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/fs.h"

namespace endure::ckpt {
namespace {

Error bad(const std::filesystem::path& file, const std::string& rule) {
  return make_error("InvalidConfig", fmt::format("{}: {}", file.string(), rule));
}

}  // namespace

ClusterTierFiles ClusterTierFiles::node() {
  return {node::kMemoryStoreConfigPath, node::kResourceConfigPath, node::kHostsPath};
}

Result<ClusterTierConfig> load_cluster_tier(const std::string& own_node,
                                            const std::vector<std::string>& job_nodes,
                                            const ClusterTierFiles& files) {
  std::error_code ec;
  if (!std::filesystem::exists(files.memory_store, ec))
    return make_error("TierOff", files.memory_store.string() + ": none: the cluster does not enable the memory tier");
  auto text = fs::read_file(files.memory_store);
  if (!text) return text.error();
  auto store = api::MemoryStoreConfig::from_json(json::parse(*text, nullptr, false));
  if (!store) return store.error();
  if (store->token.empty()) return bad(files.memory_store, "Token: must not be empty");
  if (store->port < 1 || store->port > 65534) return bad(files.memory_store, "Port: must be 1 to 65534");

  auto resources_text = fs::read_file(files.resource_config);
  if (!resources_text) return resources_text.error();
  json resources = json::parse(*resources_text, nullptr, false);
  if (!resources.is_object() || !resources.contains("InstanceGroups") || !resources["InstanceGroups"].is_array())
    return bad(files.resource_config, "InstanceGroups: a list is required");

  ClusterTierConfig config{store->cluster_name, store->token, own_node, {}, {}};
  const auto hosts = files.hosts.empty() ? std::map<std::string, std::string>{} : api::hosts_ipv4(files.hosts);
  std::set<std::string> wanted(job_nodes.begin(), job_nodes.end());
  for (const auto& group : resources["InstanceGroups"]) {
    if (!group.is_object() || !group.contains("Instances") || !group["Instances"].is_array())
      return bad(files.resource_config, "InstanceGroups[].Instances: a list is required");
    std::string group_name = group.value("Name", "");
    for (const auto& inst : group["Instances"]) {
      std::string name = inst.is_object() ? inst.value("InstanceName", "") : "";
      std::string address = inst.is_object() ? inst.value("CustomerIpAddress", "") : "";
      if (name.empty() || address.empty())
        return bad(files.resource_config, "InstanceGroups[].Instances[]: InstanceName and CustomerIpAddress are required");
      if (!wanted.empty() && !wanted.count(name)) continue;
      config.nodes.push_back({name, group_name, inst.value("Rack", "")});
      if (auto moved = hosts.find(name); moved != hosts.end()) address = moved->second;
      config.stores[name] = {name, address, store->port};
    }
  }
  for (const auto& name : job_nodes)
    if (!config.stores.count(name))
      return bad(files.resource_config, "node " + name + " of the job is not an instance of the cluster");
  if (!config.stores.count(own_node))
    return bad(files.resource_config, "this node, " + own_node + ", is not an instance of the cluster");
  return config;
}

}  // namespace endure::ckpt
