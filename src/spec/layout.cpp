#include "spec/layout.h"

#include <algorithm>

namespace endure::spec {

std::string node_name(const std::string& group, int slot) {
  return group + "-" + std::to_string(slot);
}

std::string spare_node_name(const std::string& group, int k) {
  return group + "-spare-" + std::to_string(k);
}

const NodeSlot* ClusterLayout::find(const std::string& name) const {
  for (const auto& n : nodes) {
    if (n.node_name == name) return &n;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::vector<std::string>>> ClusterLayout::partitions() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& name : partition_names) out.push_back({name, {}});
  for (const auto* list : {&nodes, &future_nodes}) {
    for (const auto& n : *list) {
      if (n.role != NodeRole::kWorker) continue;
      auto it =
          std::find_if(out.begin(), out.end(), [&](auto& p) { return p.first == n.partition; });
      if (it != out.end()) it->second.push_back(n.node_name);
    }
  }
  return out;
}

ClusterLayout make_layout(const ClusterSpec& spec, const ProvisioningParameters& params,
                          int cluster_index, const json& removed_slots) {
  ClusterLayout layout;
  layout.cluster_name = spec.name;
  layout.index = cluster_index;
  int base = kPortBase + (cluster_index - 1) * kPortsPerCluster;
  layout.slurmctld_port = base;
  for (const auto& w : params.worker_groups) {
    auto& names = layout.partition_names;
    if (std::find(names.begin(), names.end(), w.partition_name) == names.end()) {
      names.push_back(w.partition_name);
    }
  }
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const auto& group = spec.groups[g];
    const InstanceType* type = find_instance_type(group.instance_type);
    std::vector<int> removed;
    if (removed_slots.is_object() && removed_slots.contains(group.name) &&
        removed_slots[group.name].is_array()) {
      for (const auto& slot : removed_slots[group.name]) {
        if (slot.is_number_integer()) removed.push_back(slot.get<int>());
      }
    }
    auto slot_of = [&](int s, std::string name) {
      NodeSlot n;
      n.group = group.name;
      n.group_index = static_cast<int>(g);
      n.slot = s;
      n.node_name = std::move(name);
      n.hostname = n.node_name;
      n.address = "127." + std::to_string(100 + cluster_index) + "." + std::to_string(g) + "." +
                  std::to_string(s + 1);
      n.slurmd_port = base + 1 + static_cast<int>(g) * kMaxInstancesPerGroup + s;
      n.role = params.role_of(group.name);
      n.partition = params.partition_of(group.name);
      if (type) n.type = *type;
      n.threads_per_core = group.threads_per_core;
      return n;
    };
    const int spares = group.instance_count > 0 && params.role_of(group.name) == NodeRole::kWorker
                           ? group.warm_spares
                           : 0;
    int made = 0;
    for (int s = 0; made < std::max(group.instance_count, 1) && s < kMaxInstancesPerGroup - spares;
         ++s) {
      if (std::find(removed.begin(), removed.end(), s) != removed.end()) continue;
      ++made;
      NodeSlot n = slot_of(s, node_name(group.name, s));
      if (group.instance_count == 0) {
        if (n.role == NodeRole::kWorker) layout.future_nodes.push_back(std::move(n));
        continue;
      }
      if (n.role == NodeRole::kController && layout.controller_node.empty()) {
        layout.controller_node = n.node_name;
        layout.controller_address = n.address;
        layout.controller_hostname = n.hostname;
      }
      layout.nodes.push_back(std::move(n));
    }
    for (int k = 1; k <= spares; ++k) {
      NodeSlot n = slot_of(kMaxInstancesPerGroup - k, spare_node_name(group.name, k));
      n.spare = true;
      n.partition.clear();  // in no partition: Slurm schedules nothing on a spare
      layout.nodes.push_back(std::move(n));
    }
  }
  return layout;
}

void place_on_hosts(ClusterLayout& layout, const std::map<std::string, HostPlacement>& by_node) {
  for (auto& n : layout.nodes) {
    auto it = by_node.find(n.node_name);
    if (it == by_node.end()) continue;
    n.hostname = it->second.hostname;
    n.address = it->second.address;
    n.on_host = true;
    if (n.node_name == layout.controller_node) {
      layout.controller_hostname = n.hostname;
      layout.controller_address = n.address;
    }
  }
}

Result<ClusterModel> load_cluster_model(const json& spec_json, const json& provisioning_json,
                                        int cluster_index, const json& removed_slots) {
  auto spec = parse_cluster_spec(spec_json);
  if (!spec) return spec.error();
  auto params = parse_provisioning(provisioning_json, *spec);
  if (!params) return params.error();
  auto layout = make_layout(*spec, *params, cluster_index, removed_slots);
  return ClusterModel{std::move(*spec), std::move(*params), std::move(layout)};
}

}  // namespace endure::spec
