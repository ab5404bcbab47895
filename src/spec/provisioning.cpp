#include "spec/provisioning.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include "api/wire.h"

namespace endure::spec {
namespace {

using Errors = std::vector<FieldError>;

constexpr size_t kMaxPartitionName = 40;

std::string file_path(std::string_view field) {
  return std::string(kProvisioningFile) + ":" + std::string(field);
}

std::optional<size_t> group_index(const ClusterSpec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    if (spec.groups[i].name == name) return i;
  }
  return std::nullopt;
}

std::string group_names(const ClusterSpec& spec) {
  std::string out;
  for (const InstanceGroupSpec& group : spec.groups) {
    if (!out.empty()) out += ", ";
    out += group.name;
  }
  return out;
}

bool is_partition_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// ^[A-Za-z0-9_][A-Za-z0-9_.-]*$, 1..40 characters: what slurm.conf takes unquoted.
void check_partition(const std::string& name, const std::string& path, Errors& errors) {
  if (name.size() > kMaxPartitionName) {
    errors.push_back({path, "must be 1 to 40 characters long"});
  } else if (name.front() == '.' || name.front() == '-' ||
             !std::all_of(name.begin(), name.end(), is_partition_char)) {
    errors.push_back({path, "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]*$"});
  } else {
    std::string upper = name;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    // slurm.conf reads "PartitionName=DEFAULT" as defaults for every partition.
    if (upper == "DEFAULT") errors.push_back({path, "DEFAULT is reserved by Slurm"});
  }
}

// Gives each instance group at most one role and remembers where it got it.
class RoleBook {
 public:
  explicit RoleBook(const ClusterSpec& spec) : spec_(spec), given_(spec.groups.size()) {}

  // The group's index in the spec, or nullopt (with the error recorded) when the name is
  // unknown or the group already has a role.
  std::optional<size_t> assign(const std::string& name, NodeRole role, const std::string& path,
                               Errors& errors) {
    std::optional<size_t> index = group_index(spec_, name);
    if (!index) {
      errors.push_back({path, "names no instance group of cluster " + spec_.name +
                                  " (groups: " + group_names(spec_) + ")"});
      return std::nullopt;
    }
    if (given_[*index]) {
      errors.push_back({path, "instance group '" + name + "' already has the role " +
                                  role_name(given_[*index]->first) + " (from " +
                                  given_[*index]->second + ")"});
      return std::nullopt;
    }
    given_[*index] = {role, path};
    return index;
  }

  void check_every_group_has_a_role(Errors& errors) const {
    for (size_t i = 0; i < spec_.groups.size(); ++i) {
      if (!given_[i]) {
        errors.push_back({"InstanceGroups[" + std::to_string(i) + "].InstanceGroupName",
                          "has no role in " + std::string(kProvisioningFile)});
      }
    }
  }

 private:
  const ClusterSpec& spec_;
  std::vector<std::optional<std::pair<NodeRole, std::string>>> given_;
};

void check_workers(const json& params, RoleBook& roles, ProvisioningParameters& out,
                   Errors& errors) {
  const std::string path = file_path("worker_groups");
  auto it = params.find("worker_groups");
  if (it == params.end()) {
    errors.push_back({path, "is required"});
    return;
  }
  if (!it->is_array()) {
    errors.push_back({path, "must be an array"});
    return;
  }
  if (it->empty()) {
    errors.push_back({path, "must list at least one worker group"});
    return;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string entry_path = path + "[" + std::to_string(i) + "]";
    const json& entry = (*it)[i];
    if (!entry.is_object()) {
      errors.push_back({entry_path, "must be an object"});
      continue;
    }
    WorkerGroup worker;
    const std::string name_path = entry_path + ".instance_group_name";
    if (auto name = read_string_field(entry, "instance_group_name", name_path, errors, true)) {
      roles.assign(*name, NodeRole::kWorker, name_path, errors);
      worker.instance_group_name = *name;
    }
    const std::string partition_path = entry_path + ".partition_name";
    if (auto partition = read_string_field(entry, "partition_name", partition_path, errors, true)) {
      check_partition(*partition, partition_path, errors);
      worker.partition_name = *partition;
    }
    out.worker_groups.push_back(std::move(worker));
  }
}

// Checks and reads the file in one pass, so validate and parse cannot disagree.
ProvisioningParameters check_params(const json& params, const ClusterSpec& spec, Errors& errors) {
  ProvisioningParameters out;
  if (!params.is_object()) {
    errors.push_back({kProvisioningFile, "must be a JSON object"});
    return out;
  }
  // Other keys (fsx_dns_name, fsx_mountname, ...) belong to the lifecycle scripts.
  if (auto it = params.find("version"); it != params.end() && it->is_string()) {
    out.version = it->get<std::string>();
  }
  if (auto it = params.find("workload_manager"); it != params.end() && *it != "slurm") {
    errors.push_back({file_path("workload_manager"), "must be slurm"});
  }

  RoleBook roles(spec);
  const std::string controller_path = file_path("controller_group");
  if (auto name = read_string_field(params, "controller_group", controller_path, errors, true)) {
    out.controller_group = *name;
    std::optional<size_t> index =
        roles.assign(*name, NodeRole::kController, controller_path, errors);
    // slurm.conf names one SlurmctldHost, and nodes find it by the group's only hostname.
    if (index && spec.groups[*index].instance_count != 1) {
      errors.push_back({"InstanceGroups[" + std::to_string(*index) + "].InstanceCount",
                        "the controller group must have exactly 1 instance"});
    }
  }
  const std::string login_path = file_path("login_group");
  if (auto name = read_string_field(params, "login_group", login_path, errors, false)) {
    out.login_group = *name;
    roles.assign(*name, NodeRole::kLogin, login_path, errors);
  }
  check_workers(params, roles, out, errors);
  roles.check_every_group_has_a_role(errors);
  // A spare stands in for a failed worker; the controller holds Slurm's state and is
  // rebooted, never replaced, and a login node is not Slurm's to schedule.
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    if (spec.groups[i].warm_spares > 0 && out.role_of(spec.groups[i].name) != NodeRole::kWorker) {
      errors.push_back({"InstanceGroups[" + std::to_string(i) + "].WarmSpares",
                        "only a worker group keeps warm spares; " + spec.groups[i].name +
                            " is the " + role_name(out.role_of(spec.groups[i].name)) +
                            " group"});
    }
  }
  return out;
}

}  // namespace

const char* role_name(NodeRole role) {
  switch (role) {
    case NodeRole::kController:
      return "controller";
    case NodeRole::kLogin:
      return "login";
    case NodeRole::kWorker:
      return "worker";
  }
  return "worker";
}

NodeRole ProvisioningParameters::role_of(const std::string& group_name) const {
  if (group_name == controller_group) return NodeRole::kController;
  if (!login_group.empty() && group_name == login_group) return NodeRole::kLogin;
  return NodeRole::kWorker;
}

std::string ProvisioningParameters::partition_of(const std::string& group_name) const {
  for (const WorkerGroup& worker : worker_groups) {
    if (worker.instance_group_name == group_name) return worker.partition_name;
  }
  return "";
}

json ProvisioningParameters::to_json() const {
  json out = {{"version", version},
              {"workload_manager", workload_manager},
              {"controller_group", controller_group}};
  if (!login_group.empty()) out["login_group"] = login_group;
  json workers = json::array();
  for (const WorkerGroup& worker : worker_groups) {
    workers.push_back({{"instance_group_name", worker.instance_group_name},
                       {"partition_name", worker.partition_name}});
  }
  out["worker_groups"] = std::move(workers);
  return out;
}

std::vector<FieldError> validate_provisioning(const json& params, const ClusterSpec& spec) {
  Errors errors;
  check_params(params, spec, errors);
  return errors;
}

Result<ProvisioningParameters> parse_provisioning(const json& params, const ClusterSpec& spec) {
  Errors errors;
  ProvisioningParameters out = check_params(params, spec, errors);
  if (!errors.empty()) return make_error(api::kValidationException, describe(errors));
  return out;
}

std::optional<ProvisioningParameters> roles_from_slurm_config(const ClusterSpec& spec) {
  if (spec.groups.empty() || !spec.groups.front().slurm) return std::nullopt;
  ProvisioningParameters out;
  for (const InstanceGroupSpec& group : spec.groups) {
    switch (group.slurm->node_type) {
      case api::SlurmNodeType::kController:
        out.controller_group = group.name;
        break;
      case api::SlurmNodeType::kLogin:
        out.login_group = group.name;
        break;
      case api::SlurmNodeType::kCompute:
        out.worker_groups.push_back({group.name, group.slurm->partition()});
        break;
    }
  }
  return out;
}

std::vector<FieldError> role_disagreements(const ClusterSpec& spec,
                                           const ProvisioningParameters& from_config,
                                           const ProvisioningParameters& from_file) {
  auto says = [](const ProvisioningParameters& p, const std::string& group) {
    NodeRole role = p.role_of(group);
    std::string out = role_name(role);
    if (role == NodeRole::kWorker) out += " in partition " + p.partition_of(group);
    return out;
  };
  Errors errors;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const std::string& group = spec.groups[i].name;
    std::string config = says(from_config, group), file = says(from_file, group);
    if (config == file) continue;
    errors.push_back({"InstanceGroups[" + std::to_string(i) + "].SlurmConfig",
                      "makes " + group + " the " + config + ", but " + kProvisioningFile +
                          " makes it the " + file + "; make them agree or remove the file"});
  }
  return errors;
}

}  // namespace endure::spec
