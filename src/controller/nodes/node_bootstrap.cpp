#include "controller/nodes/node_bootstrap.h"

#include <map>

#include "api/node_contract.h"
#include "slurm/slurm_conf.h"

namespace endure::controller {

std::optional<api::MemoryStoreConfig> memory_store_config(const std::string& cluster_name,
                                                          const spec::ClusterSpec& spec,
                                                          const std::string& token) {
  if (!spec::memory_tier_on(spec.tiered_storage)) return std::nullopt;
  api::MemoryStoreConfig config;
  config.cluster_name = cluster_name;
  config.memory_percent = spec.tiered_storage->memory_percent.value_or(spec::kDefaultMemoryPercent);
  config.port = node::kMemoryStorePort;
  config.token = token;
  return config;
}

const store::InstanceRow* live_in_slot(const std::vector<store::InstanceRow>& rows,
                                       const std::string& node_name) {
  for (const auto& r : rows) {
    if (r.terminated_at == 0 && r.node_name == node_name) return &r;
  }
  return nullptr;
}

json resource_config(const store::ClusterRow& cluster, const spec::ClusterModel& model,
                     const std::vector<store::InstanceRow>& rows) {
  const spec::ClusterLayout& layout = model.layout;
  std::map<std::string, json> groups;
  std::vector<std::string> order;
  for (const auto& n : layout.nodes) {
    if (!groups.count(n.group)) {
      order.push_back(n.group);
      groups[n.group] = {{"Name", n.group},
                         {"InstanceType", n.type.name},
                         {"Role", spec::role_name(n.role)},
                         {"PartitionName", n.partition},
                         {"Instances", json::array()}};
    }
    json inst = {{"InstanceName", n.node_name},
                 {"CustomerIpAddress", n.address},
                 {"SlurmdPort", n.slurmd_port}};
    if (const auto* r = live_in_slot(rows, n.node_name)) inst["InstanceId"] = r->instance_id;
    groups[n.group]["Instances"].push_back(inst);
  }
  json group_list = json::array();
  for (const auto& g : order) group_list.push_back(groups[g]);
  json config = {{"ClusterConfig", {{"ClusterArn", cluster.arn}, {"ClusterName", cluster.name}}},
                 {"InstanceGroups", group_list},
                 {"Slurm",
                  {{"ControllerNode", layout.controller_node},
                   {"ControllerAddress", layout.controller_address},
                   {"SlurmctldPort", layout.slurmctld_port}}}};
  if (const auto& fs = model.spec.shared_fs) {
    // Everything but endured's own key: the node mounts with the cluster's.
    config["SharedFileSystem"] = {{"DnsName", fs->dns_name},
                                  {"Port", fs->port},
                                  {"User", fs->user},
                                  {"MountName", fs->mount_name},
                                  {"MountPoint", node::kSharedFsPath},
                                  {"IdentityFile", node::kFsxKeyPath},
                                  {"KnownHostsFile", node::kFsxKnownHostsPath}};
  }
  return config;
}

provider::LaunchRequest launch_request(const Config& config, const store::ClusterRow& cluster,
                                       const spec::ClusterModel& model, const spec::NodeSlot& slot,
                                       const spec::InstanceGroupSpec& group,
                                       const store::InstanceRow& row,
                                       const std::vector<store::InstanceRow>& rows,
                                       const NodeFiles& files, const NodeEndpoint& endpoint) {
  const std::string url = endpoint.url.empty() ? config.endpoint() : endpoint.url;
  api::AgentConfig agent_config;
  agent_config.endpoint = url;
  agent_config.ca_file = endpoint.ca_file;
  agent_config.instance_id = row.instance_id;
  agent_config.token = row.agent_token;
  agent_config.node_name = row.node_name;
  agent_config.group = row.group;
  agent_config.role = spec::role_name(slot.role);
  agent_config.partition = slot.partition;
  agent_config.controller_node = model.layout.controller_node;
  agent_config.on_create = group.lifecycle.on_create;
  agent_config.lifecycle_timeout_seconds = config.lifecycle_timeout_seconds;
  agent_config.heartbeat_seconds = config.heartbeat_seconds;
  agent_config.health_check_seconds = config.health_check_seconds;
  agent_config.cpus = slot.type.cpus;
  agent_config.memory_mib = slot.type.memory_mib;
  agent_config.gpus = slot.type.gpus;
  // Readable by every user of the node: the token allows only the AutoResume* calls.
  api::AutoResumeConfig auto_resume_config;
  auto_resume_config.endpoint = url;
  auto_resume_config.cluster_name = cluster.name;
  auto_resume_config.token = files.auto_resume_token;
  auto_resume_config.max_resumes = config.auto_resume_max_resumes;
  auto_resume_config.ca_file = endpoint.ca_file;
  provider::LaunchRequest request;
  request.cluster_id = cluster.id;
  request.instance_id = row.instance_id;
  request.node_name = row.node_name;
  request.local_disk_mib = slot.type.local_disk_mib;
  request.files = {
      {node::kSlurmConfPath, files.slurm_conf},
      {node::kPlugstackConfPath, "include /etc/slurm/plugstack.conf.d/*.conf\n"},
      {node::kCliFilterPath, slurm::render_cli_filter()},
      {node::kAutoResumeConfigPath, auto_resume_config.to_json().dump(2)},
      {node::kHostsPath, files.hosts},
      {node::kResourceConfigPath, resource_config(cluster, model, rows).dump(2)},
      {node::kProvisioningPath, cluster.provisioning.dump(2)},
  };
  request.secret_files = {{node::kAgentConfigPath, agent_config.to_json().dump(2)},
                          {node::kMungeKeyPath, files.munge_key}};
  // Readable by every user of the node: the training job is the memory store's client.
  if (auto memory_store = memory_store_config(cluster.name, model.spec, files.memory_store_token)) {
    request.files.push_back({node::kMemoryStoreConfigPath, memory_store->to_json().dump(2)});
  }
  if (model.spec.shared_fs) {
    request.files.push_back({node::kFsxKnownHostsPath, files.fsx_known_hosts});
    request.secret_files.push_back({node::kFsxKeyPath, files.fsx_key});
  }
  return request;
}

}  // namespace endure::controller
