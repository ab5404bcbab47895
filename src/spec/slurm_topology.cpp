#include "spec/slurm_topology.h"

#include <strings.h>

#include <algorithm>

#include "spec/cluster_spec.h"

namespace endure::spec {
namespace {

namespace F = api::field;
using api::SlurmNodeType;

std::string group_path_of(size_t i) { return "InstanceGroups[" + std::to_string(i) + "]"; }

std::string slurm_config_path(const std::string& group_path, std::string_view key = {}) {
  std::string path = join_path(group_path, F::kSlurmConfig);
  return key.empty() ? path : join_path(path, key);
}

bool is_ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The cloud's [a-zA-Z0-9](-*[a-zA-Z0-9])*, up to 1024 characters; and not Slurm's DEFAULT,
// which slurm.conf reads as the defaults of every partition.
void check_partition_name(const std::string& name, const std::string& path,
                          std::vector<FieldError>& errors) {
  if (name.size() > kMaxPartitionNameLength) {
    errors.push_back({path, "must be 1 to 1024 characters long"});
    return;
  }
  bool ok =
      !name.empty() && is_ascii_alnum(name.front()) && is_ascii_alnum(name.back()) &&
      std::all_of(name.begin(), name.end(), [](char c) { return is_ascii_alnum(c) || c == '-'; });
  if (!ok) {
    errors.push_back({path,
                      "must match [a-zA-Z0-9](-*[a-zA-Z0-9])* (letters, digits and hyphens, "
                      "starting and ending with a letter or digit)"});
    return;
  }
  if (::strcasecmp(name.c_str(), "DEFAULT") == 0) {
    errors.push_back({path, "DEFAULT is reserved by Slurm"});
  }
}

}  // namespace

std::string SlurmGroupConfig::partition() const {
  if (node_type != SlurmNodeType::kCompute) return "";
  return partition_names.empty() ? kDefaultPartition : partition_names.front();
}

api::ClusterSlurmConfig SlurmGroupConfig::to_api() const {
  api::ClusterSlurmConfig out;
  out.node_type = node_type;
  if (!partition_names.empty()) out.partition_names = partition_names;
  return out;
}

api::ClusterOrchestrator OrchestratorSpec::to_api() const {
  api::ClusterOrchestrator out;
  out.slurm = api::OrchestratorSlurmConfig{strategy};
  return out;
}

api::SlurmConfigStrategy slurm_config_strategy(const std::optional<OrchestratorSpec>& given) {
  return given && given->strategy ? *given->strategy : api::SlurmConfigStrategy::kManaged;
}

std::optional<SlurmGroupConfig> read_slurm_config(const json& group, const std::string& group_path,
                                                  std::vector<FieldError>& errors) {
  auto it = group.find(F::kSlurmConfig);
  if (it == group.end()) return std::nullopt;
  const std::string path = slurm_config_path(group_path);
  if (!it->is_object()) {
    errors.push_back({path, "must be an object"});
    return std::nullopt;
  }
  const size_t before = errors.size();
  check_known_keys(*it, path, keys_of<api::ClusterSlurmConfig>(), errors);
  SlurmGroupConfig out;
  if (auto type = it->find(F::kNodeType); type == it->end()) {
    errors.push_back({slurm_config_path(group_path, F::kNodeType), "is required"});
  } else if (!type->is_string() || !parse_value(type->get<std::string>(), out.node_type)) {
    errors.push_back({slurm_config_path(group_path, F::kNodeType),
                      "must be one of " + value_names(api::SlurmNodeType{})});
  }
  if (auto names = it->find(F::kPartitionNames); names != it->end()) {
    const std::string names_path = slurm_config_path(group_path, F::kPartitionNames);
    if (!names->is_array()) {
      errors.push_back({names_path, "must be an array"});
    } else if (names->size() > 1) {
      errors.push_back({names_path, "must list at most 1 partition name"});
    } else {
      for (size_t i = 0; i < names->size(); ++i) {
        const std::string name_path = names_path + "[" + std::to_string(i) + "]";
        if (!(*names)[i].is_string()) {
          errors.push_back({name_path, "must be a string"});
          continue;
        }
        std::string name = (*names)[i].get<std::string>();
        check_partition_name(name, name_path, errors);
        out.partition_names.push_back(std::move(name));
      }
    }
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

std::optional<OrchestratorSpec> read_orchestrator(const json& request,
                                                  std::vector<FieldError>& errors) {
  auto it = request.find(F::kOrchestrator);
  if (it == request.end()) return std::nullopt;
  if (!it->is_object()) {
    errors.push_back({F::kOrchestrator, "must be an object"});
    return std::nullopt;
  }
  const size_t before = errors.size();
  check_known_keys(*it, F::kOrchestrator, keys_of<api::ClusterOrchestrator>(), errors);
  const std::string slurm_path = join_path(F::kOrchestrator, F::kSlurm);
  if (it->contains(F::kEks)) {
    errors.push_back({join_path(F::kOrchestrator, F::kEks),
                      "endure orchestrates with Slurm: give Orchestrator.Slurm or nothing"});
  }
  OrchestratorSpec out;
  auto slurm = it->find(F::kSlurm);
  if (slurm == it->end()) {
    if (!it->contains(F::kEks)) errors.push_back({slurm_path, "is required"});
  } else if (!slurm->is_object()) {
    errors.push_back({slurm_path, "must be an object"});
  } else {
    check_known_keys(*slurm, slurm_path, keys_of<api::OrchestratorSlurmConfig>(), errors);
    if (auto strategy = slurm->find(F::kSlurmConfigStrategy); strategy != slurm->end()) {
      api::SlurmConfigStrategy value{};
      if (strategy->is_string() && parse_value(strategy->get<std::string>(), value)) {
        out.strategy = value;
      } else {
        errors.push_back({join_path(slurm_path, F::kSlurmConfigStrategy),
                          "must be one of " + value_names(api::SlurmConfigStrategy{})});
      }
    }
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

void check_slurm_topology(const ClusterSpec& spec, std::vector<FieldError>& errors) {
  std::optional<size_t> first_with, first_without;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    auto& first = spec.groups[i].slurm ? first_with : first_without;
    if (!first) first = i;
  }
  if (!first_with) return;  // the roles come from provisioning_parameters.json
  if (first_without) {
    errors.push_back({slurm_config_path(group_path_of(*first_without)),
                      "is required when another group has one (" + group_path_of(*first_with) +
                          "): the roles come from SlurmConfig on every group or from " +
                          "provisioning_parameters.json"});
    return;
  }
  std::optional<size_t> controller, login;
  bool compute = false;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const InstanceGroupSpec& group = spec.groups[i];
    const std::string type_path = slurm_config_path(group_path_of(i), F::kNodeType);
    switch (group.slurm->node_type) {
      case SlurmNodeType::kController:
        if (controller) {
          errors.push_back({type_path, "a second Controller group (" + group_path_of(*controller) +
                                           " is one); a cluster has one controller group"});
        }
        controller = controller.value_or(i);
        // slurm.conf names one SlurmctldHost, and nodes find it by the group's only hostname.
        if (group.instance_count != 1) {
          errors.push_back({join_path(group_path_of(i), F::kInstanceCount),
                            "the controller group must have exactly 1 instance"});
        }
        break;
      case SlurmNodeType::kLogin:
        if (login) {
          errors.push_back({type_path, "a second Login group (" + group_path_of(*login) +
                                           " is one); a cluster has at most one login group"});
        }
        login = login.value_or(i);
        break;
      case SlurmNodeType::kCompute:
        compute = true;
        break;
    }
    if (group.slurm->node_type != SlurmNodeType::kCompute) {
      if (!group.slurm->partition_names.empty()) {
        errors.push_back({slurm_config_path(group_path_of(i), F::kPartitionNames),
                          "only a Compute group joins a partition"});
      }
      // A spare stands in for a failed compute node; the controller is rebooted, never
      // replaced, and a login node is not Slurm's to schedule.
      if (group.warm_spares > 0) {
        errors.push_back({join_path(group_path_of(i), F::kWarmSpares),
                          "only a Compute group keeps warm spares"});
      }
    }
  }
  if (!controller) {
    errors.push_back({F::kInstanceGroups, "one group must have SlurmConfig.NodeType Controller"});
  }
  if (!compute) {
    errors.push_back(
        {F::kInstanceGroups, "at least one group must have SlurmConfig.NodeType Compute"});
  }
}

}  // namespace endure::spec
