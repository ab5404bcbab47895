#include "spec/cluster_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>

#include "api/messages.h"
#include "api/wire.h"
#include "s3/s3_uri.h"
#include "spec/instance_types.h"
#include "spec/shared_fs.h"

namespace endure::spec {
namespace {

using Errors = std::vector<FieldError>;
using Keys = std::vector<std::string_view>;
namespace F = api::field;

// The fields each object may hold, as the typed messages of api/ list them. Tags and
// VpcConfig are accepted and ignored so that a request written for the cloud service still
// parses; Orchestrator is read, and its Eks refused, since asking for EKS and silently
// getting Slurm would be worse than an error. On UpdateCluster SharedFileSystem may be
// echoed back as it is, never changed: every node mounts it. ExecutionRole and
// InstanceStorageConfigs mean nothing here; HostPool, WarmSpares and SharedFileSystem are
// endure's own.
const Keys kCreateFields = keys_of<api::CreateClusterRequest>();
const Keys kUpdateFields = keys_of<api::UpdateClusterRequest>();
const Keys kGroupFields = keys_of<api::InstanceGroupSpec>();
const Keys kLifeCycleFields = keys_of<api::LifeCycleConfig>();

constexpr int kMaxNameLength = 63;
constexpr std::string_view kNamePattern = "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$";


std::string index_path(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string join_keys(const Keys& keys) {
  std::string out;
  for (std::string_view key : keys) {
    if (!out.empty()) out += ", ";
    out += key;
  }
  return out;
}

// Records a type error unless obj[key] is absent or has the wanted type.
void check_ignored(const json& obj, std::string_view key, const std::string& prefix,
                   bool want_array, Errors& errors) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  if (want_array && !it->is_array()) errors.push_back({join_path(prefix, key), "must be an array"});
  if (!want_array && !it->is_object()) {
    errors.push_back({join_path(prefix, key), "must be an object"});
  }
}

// Reads obj[key] as an integer in [lo, hi]; fallback when absent or invalid. JSON floats,
// strings and bools are refused rather than converted: "2.5" instances is a mistake.
int read_int_field(const json& obj, std::string_view key, const std::string& path, int lo, int hi,
                   const std::string& rule, bool required, int fallback, Errors& errors) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) errors.push_back({path, "is required"});
    return fallback;
  }
  std::optional<std::int64_t> value;
  if (it->is_number_unsigned()) {
    auto u = it->get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) value = static_cast<std::int64_t>(u);
  } else if (it->is_number_integer()) {
    value = it->get<std::int64_t>();
  }
  if (!value || *value < lo || *value > hi) {
    errors.push_back({path, rule});
    return fallback;
  }
  return static_cast<int>(*value);
}

// ASCII only, whatever the locale: these names end up in hostnames and slurm.conf.
bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// kNamePattern, checked by hand: alphanumerics and hyphens, alphanumeric at both ends.
// The name becomes a Slurm ClusterName, hostnames and folder names, so nothing else fits.
void check_name(const std::string& name, const std::string& path, Errors& errors) {
  if (name.size() > kMaxNameLength) {
    errors.push_back({path, "must be 1 to 63 characters long"});
    return;
  }
  bool ok = is_alnum(name.front()) && is_alnum(name.back()) &&
            std::all_of(name.begin(), name.end(), [](char c) { return is_alnum(c) || c == '-'; });
  if (!ok) {
    errors.push_back({path, "must match " + std::string(kNamePattern) +
                                " (letters, digits and hyphens, starting and ending with a "
                                "letter or digit)"});
  }
}

bool valid_source_uri(const std::string& uri) {
  if (uri.starts_with("/")) return true;
  if (uri.starts_with("file://")) return uri.size() > 7 && uri[7] == '/';
  if (uri.starts_with("s3://")) {
    std::string_view rest = std::string_view(uri).substr(5);
    return !rest.empty() && rest.front() != '/';
  }
  return false;
}

// OnCreate must stay inside the source folder: it is joined to it and run as root.
void check_on_create(const std::string& on_create, const std::string& path, Errors& errors) {
  if (on_create.front() == '/') {
    errors.push_back({path, "must be a path relative to SourceS3Uri (no leading /)"});
    return;
  }
  size_t start = 0;
  while (start <= on_create.size()) {
    size_t end = on_create.find('/', start);
    if (end == std::string::npos) end = on_create.size();
    if (on_create.compare(start, end - start, "..") == 0) {
      errors.push_back({path, "must not contain a .. component"});
      return;
    }
    start = end + 1;
  }
}

LifeCycleConfig check_lifecycle(const json& group, const std::string& group_path, Errors& errors) {
  LifeCycleConfig out;
  const std::string path = join_path(group_path, F::kLifeCycleConfig);
  auto it = group.find(F::kLifeCycleConfig);
  if (it == group.end()) {
    errors.push_back({path, "is required"});
    return out;
  }
  if (!it->is_object()) {
    errors.push_back({path, "must be an object"});
    return out;
  }
  check_known_keys(*it, path, kLifeCycleFields, errors);
  const std::string source_path = join_path(path, F::kSourceS3Uri);
  if (auto source = read_string_field(*it, F::kSourceS3Uri, source_path, errors, true)) {
    std::string bucket_problem;
    if (source->starts_with("s3://")) {
      std::string rest = source->substr(5);
      bucket_problem = s3::bucket_name_problem(rest.substr(0, rest.find('/')));
    }
    if (!bucket_problem.empty()) {
      errors.push_back({source_path, "s3://BUCKET/PREFIX: " + bucket_problem});
    } else if (valid_source_uri(*source)) {
      out.source_uri = *source;
    } else {
      errors.push_back({source_path,
                        "must be an absolute path (/...), file:///absolute/path or "
                        "s3://bucket/prefix"});
    }
  }
  const std::string on_create_path = join_path(path, F::kOnCreate);
  if (auto on_create = read_string_field(*it, F::kOnCreate, on_create_path, errors, true)) {
    check_on_create(*on_create, on_create_path, errors);
    out.on_create = *on_create;
  }
  return out;
}

// One InstanceGroups entry, as read; fields that fail keep their defaults.
struct ListedGroup {
  InstanceGroupSpec spec;
  std::string path;            // "InstanceGroups[2]"
  bool name_ok = false;        // spec.name was read and is valid
  bool ok = false;             // the entry broke no rule of its own
  bool threads_given = false;  // ThreadsPerCore was in the request, not defaulted
  bool pool_given = false;     // HostPool likewise
  bool spares_given = false;   // WarmSpares likewise
  bool slurm_given = false;    // SlurmConfig likewise
  bool schedule_given = false;  // ScheduledUpdateConfig likewise
};

ListedGroup check_group(const json& group, const std::string& path, Errors& errors) {
  ListedGroup out;
  out.path = path;
  const size_t errors_before = errors.size();
  check_known_keys(group, path, kGroupFields, errors);

  const std::string name_path = join_path(path, F::kInstanceGroupName);
  if (auto name = read_string_field(group, F::kInstanceGroupName, name_path, errors, true)) {
    const size_t name_errors = errors.size();
    check_name(*name, name_path, errors);
    out.name_ok = errors.size() == name_errors;
    out.spec.name = *name;
  }

  const std::string type_path = join_path(path, F::kInstanceType);
  if (auto type = read_string_field(group, F::kInstanceType, type_path, errors, true)) {
    if (find_instance_type(*type) == nullptr) {
      errors.push_back({type_path, "must be one of " + instance_type_names()});
    } else {
      out.spec.instance_type = *type;
    }
  }

  out.spec.instance_count = read_int_field(
      group, F::kInstanceCount, join_path(path, F::kInstanceCount), 0, kMaxInstancesPerGroup,
      "must be an integer from 0 to " + std::to_string(kMaxInstancesPerGroup),
      /*required=*/true, 0, errors);
  out.spec.lifecycle = check_lifecycle(group, path, errors);
  out.threads_given = group.contains(F::kThreadsPerCore);
  out.spec.threads_per_core =
      read_int_field(group, F::kThreadsPerCore, join_path(path, F::kThreadsPerCore), 1, 2,
                     "must be 1 or 2", /*required=*/false, 1, errors);

  const std::string pool_path = join_path(path, F::kHostPool);
  out.pool_given = group.contains(F::kHostPool);
  out.spares_given = group.contains(F::kWarmSpares);
  if (out.pool_given) {
    if (auto pool = read_string_field(group, F::kHostPool, pool_path, errors, false)) {
      check_name(*pool, pool_path, errors);
      out.spec.host_pool = *pool;
    }
  }
  out.spec.warm_spares = read_int_field(
      group, F::kWarmSpares, join_path(path, F::kWarmSpares), 0, kMaxWarmSpares,
      "must be an integer from 0 to " + std::to_string(kMaxWarmSpares), /*required=*/false, 0,
      errors);
  // Spares take the top slots of the group's block of addresses and ports.
  if (out.spec.instance_count + out.spec.warm_spares > kMaxInstancesPerGroup) {
    errors.push_back({join_path(path, F::kWarmSpares),
                      "InstanceCount plus WarmSpares must be at most " +
                          std::to_string(kMaxInstancesPerGroup)});
  }

  out.slurm_given = group.contains(F::kSlurmConfig);
  out.spec.slurm = read_slurm_config(group, path, errors);
  out.schedule_given = group.contains(F::kScheduledUpdateConfig);
  out.spec.scheduled_update = read_scheduled_update(group, path, errors);

  auto role = group.find(F::kExecutionRole);
  if (role != group.end() && !role->is_string()) {
    errors.push_back({join_path(path, F::kExecutionRole), "must be a string"});
  }
  check_ignored(group, F::kInstanceStorageConfigs, path, /*want_array=*/true, errors);

  out.ok = errors.size() == errors_before;
  return out;
}

// The InstanceGroups array, shared by CreateCluster and UpdateCluster so both enforce the
// same rules. Empty when the field is missing or not an array.
std::vector<ListedGroup> check_groups(const json& request, Errors& errors) {
  std::vector<ListedGroup> out;
  auto it = request.find(F::kInstanceGroups);
  if (it == request.end()) {
    errors.push_back({F::kInstanceGroups, "is required"});
    return out;
  }
  if (!it->is_array()) {
    errors.push_back({F::kInstanceGroups, "must be an array"});
    return out;
  }
  if (it->empty() || it->size() > static_cast<size_t>(kMaxInstanceGroups)) {
    errors.push_back(
        {F::kInstanceGroups, "must list 1 to " + std::to_string(kMaxInstanceGroups) + " groups"});
  }
  // Hostnames are case-insensitive, so "Worker" and "worker" would collide as nodes.
  std::vector<std::pair<std::string, std::string>> seen;  // lowercased name, its path
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string path = index_path(F::kInstanceGroups, i);
    const json& group = (*it)[i];
    if (!group.is_object()) {
      errors.push_back({path, "must be an object"});
      continue;
    }
    ListedGroup listed = check_group(group, path, errors);
    if (listed.name_ok) {
      std::string lower = listed.spec.name;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      auto dup = std::find_if(seen.begin(), seen.end(),
                              [&](const auto& entry) { return entry.first == lower; });
      if (dup != seen.end()) {
        errors.push_back({join_path(path, F::kInstanceGroupName), "duplicates the name of " +
                                                                    dup->second +
                                                                    " (names are unique, "
                                                                    "ignoring case)"});
      } else {
        seen.emplace_back(lower, path);
      }
    }
    out.push_back(std::move(listed));
  }
  return out;
}

std::string read_node_recovery(const json& request, const std::string& fallback, Errors& errors) {
  auto it = request.find(F::kNodeRecovery);
  if (it == request.end()) return fallback;
  if (!it->is_string() || (*it != "Automatic" && *it != "None")) {
    errors.push_back({F::kNodeRecovery, "must be one of Automatic, None"});
    return fallback;
  }
  return it->get<std::string>();
}

// NodeProvisioningMode: Continuous is the one value (the cloud's only one); absent keeps
// fallback.
bool read_provisioning_mode(const json& request, bool fallback, Errors& errors) {
  auto it = request.find(F::kNodeProvisioningMode);
  if (it == request.end()) return fallback;
  if (*it != "Continuous") {
    errors.push_back({F::kNodeProvisioningMode, "must be Continuous"});
    return fallback;
  }
  return true;
}

// Nodes on hosts share /fsx only through the SharedFileSystem; a local node shares
// endured's own folder and cannot mount a file server's. So one goes with the other.
void check_shared_fs_placement(const ClusterSpec& spec, bool declared, Errors& errors) {
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const std::string pool_path = join_path(index_path(F::kInstanceGroups, i), F::kHostPool);
    // A HostPool that broke its own rule says nothing about where the nodes are.
    if (std::any_of(errors.begin(), errors.end(),
                    [&](const FieldError& e) { return e.path == pool_path; })) {
      continue;
    }
    bool on_hosts = !spec.groups[i].host_pool.empty();
    if (on_hosts && !declared) {
      errors.push_back({F::kSharedFileSystem,
                        "is required when an instance group draws from a HostPool (" +
                            index_path(F::kInstanceGroups, i) +
                            "): nodes on hosts share /fsx through it"});
      return;
    }
    if (!on_hosts && declared) {
      errors.push_back(
          {pool_path, "is required when SharedFileSystem is set: a local node cannot mount it"});
    }
  }
}

ClusterSpec check_create(const json& request, Errors& errors) {
  ClusterSpec spec;
  if (!request.is_object()) {
    errors.push_back({"", "must be a JSON object"});
    return spec;
  }
  check_known_keys(request, "", kCreateFields, errors);
  if (auto name = read_string_field(request, F::kClusterName, F::kClusterName, errors, true)) {
    check_name(*name, F::kClusterName, errors);
    spec.name = *name;
  }
  // A SlurmConfig that broke its own rules says nothing of the roles across groups.
  bool slurm_read = true;
  for (ListedGroup& listed : check_groups(request, errors)) {
    slurm_read &= !listed.slurm_given || listed.spec.slurm.has_value();
    spec.groups.push_back(std::move(listed.spec));
  }
  spec.node_recovery = read_node_recovery(request, spec.node_recovery, errors);
  spec.tiered_storage = read_tiered_storage(request, errors);
  spec.orchestrator = read_orchestrator(request, errors);
  if (slurm_read) check_slurm_topology(spec, errors);
  spec.continuous = read_provisioning_mode(request, false, errors);
  spec.shared_fs = read_shared_fs(request, errors);
  check_shared_fs_placement(spec, request.contains(F::kSharedFileSystem), errors);
  check_ignored(request, F::kTags, "", /*want_array=*/true, errors);
  check_ignored(request, F::kVpcConfig, "", /*want_array=*/false, errors);
  return spec;
}

Error validation_error(const Errors& errors) {
  return make_error(api::kValidationException, describe(errors));
}

// Checks an UpdateCluster request and applies it to a copy of current.
ClusterSpec check_update(const ClusterSpec& current, const json& request, Errors& errors) {
  if (!request.is_object()) {
    errors.push_back({"", "must be a JSON object"});
    return current;
  }
  check_known_keys(request, "", kUpdateFields, errors);
  if (auto name = read_string_field(request, F::kClusterName, F::kClusterName, errors, true);
      name && *name != current.name) {
    errors.push_back(
        {F::kClusterName, "must be the name of the cluster being updated, " + current.name});
  }

  ClusterSpec next = current;
  auto groups_field = request.find(F::kInstanceGroups);
  const bool groups_listed = groups_field != request.end() && groups_field->is_array();
  // A cluster-wide setting may change alone: switching recovery or the memory tier off
  // needs no list of the groups.
  std::vector<ListedGroup> listed_groups;
  if (groups_field != request.end()) {
    listed_groups = check_groups(request, errors);
  } else if (!request.contains(F::kNodeRecovery) && !request.contains(F::kTieredStorageConfig) &&
             !request.contains(F::kOrchestrator) && !request.contains(F::kNodeProvisioningMode)) {
    errors.push_back({F::kInstanceGroups,
                      "is required unless NodeRecovery, TieredStorageConfig, Orchestrator or "
                      "NodeProvisioningMode is given"});
  }
  std::vector<bool> seen(current.groups.size(), false);
  for (const ListedGroup& listed : listed_groups) {
    if (!listed.name_ok) continue;
    auto found =
        std::find_if(current.groups.begin(), current.groups.end(),
                     [&](const InstanceGroupSpec& g) { return g.name == listed.spec.name; });
    if (found == current.groups.end()) {
      errors.push_back({join_path(listed.path, F::kInstanceGroupName),
                        "no such instance group in cluster " + current.name +
                            " (adding groups is not supported)"});
      continue;
    }
    const size_t index = found - current.groups.begin();
    // A second listing is already reported by check_groups as a duplicate name.
    if (seen[index]) continue;
    seen[index] = true;
    // Comparing fields that broke a rule would only repeat that error.
    if (!listed.ok) continue;

    const std::string fixed = "cannot be changed by UpdateCluster (is ";
    if (listed.spec.instance_type != found->instance_type) {
      errors.push_back(
          {join_path(listed.path, F::kInstanceType), fixed + found->instance_type + ")"});
    }
    if (listed.spec.lifecycle.source_uri != found->lifecycle.source_uri) {
      errors.push_back({join_path(listed.path, "LifeCycleConfig.SourceS3Uri"),
                        fixed + found->lifecycle.source_uri + ")"});
    }
    if (listed.spec.lifecycle.on_create != found->lifecycle.on_create) {
      errors.push_back({join_path(listed.path, "LifeCycleConfig.OnCreate"),
                        fixed + found->lifecycle.on_create + ")"});
    }
    if (listed.pool_given && listed.spec.host_pool != found->host_pool) {
      errors.push_back({join_path(listed.path, F::kHostPool),
                        fixed + (found->host_pool.empty() ? "not set" : found->host_pool) + ")"});
    }
    // Left out, ThreadsPerCore keeps its value rather than reverting to the default.
    if (listed.threads_given && listed.spec.threads_per_core != found->threads_per_core) {
      errors.push_back({join_path(listed.path, F::kThreadsPerCore),
                        fixed + std::to_string(found->threads_per_core) + ")"});
    }
    // Left out, SlurmConfig keeps the group's role; a role never changes under running nodes.
    if (listed.slurm_given && listed.spec.slurm != found->slurm) {
      errors.push_back({join_path(listed.path, F::kSlurmConfig),
                        fixed + (found->slurm ? found->slurm->to_api().to_json().dump()
                                              : std::string("not set")) +
                            ")"});
    }
    next.groups[index].instance_count = listed.spec.instance_count;
    // Given, a schedule replaces the group's; left out, the group keeps its own.
    if (listed.schedule_given) next.groups[index].scheduled_update = listed.spec.scheduled_update;
    // Left out, WarmSpares keeps its value too.
    if (listed.spares_given) next.groups[index].warm_spares = listed.spec.warm_spares;
  }
  if (groups_listed) {
    for (size_t i = 0; i < current.groups.size(); ++i) {
      if (!seen[i]) {
        errors.push_back({F::kInstanceGroups,
                          "group '" + current.groups[i].name + "' is missing; list every group"});
      }
    }
  }
  next.node_recovery = read_node_recovery(request, current.node_recovery, errors);
  if (auto tier = read_tiered_storage(request, errors)) next.tiered_storage = tier;
  if (auto orchestrator = read_orchestrator(request, errors)) next.orchestrator = orchestrator;
  check_slurm_topology(next, errors);
  next.continuous = read_provisioning_mode(request, current.continuous, errors);
  if (request.contains(F::kSharedFileSystem)) {
    auto listed = read_shared_fs(request, errors);
    if (listed && listed != current.shared_fs) {
      errors.push_back({F::kSharedFileSystem, "cannot be changed by UpdateCluster (every node mounts it)"});
    }
  }
  return next;
}

}  // namespace

std::string join_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void check_known_keys(const json& obj, const std::string& prefix, const Keys& known,
                      Errors& errors) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      errors.push_back(
          {join_path(prefix, it.key()), "is not a known field; known: " + join_keys(known)});
    }
  }
}

std::string describe(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& error : errors) {
    if (!out.empty()) out += "; ";
    out += error.path.empty() ? error.rule : error.path + ": " + error.rule;
  }
  return out;
}

std::optional<std::string> read_string_field(const json& obj, const std::string& key,
                                             const std::string& path,
                                             std::vector<FieldError>& errors, bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) errors.push_back({path, "is required"});
    return std::nullopt;
  }
  if (!it->is_string()) {
    errors.push_back({path, "must be a string"});
    return std::nullopt;
  }
  if (it->get_ref<const std::string&>().empty()) {
    errors.push_back({path, "must not be empty"});
    return std::nullopt;
  }
  return it->get<std::string>();
}

const InstanceGroupSpec* ClusterSpec::find_group(const std::string& group_name) const {
  for (const InstanceGroupSpec& group : groups) {
    if (group.name == group_name) return &group;
  }
  return nullptr;
}

json ClusterSpec::to_json() const {
  api::CreateClusterRequest out;
  out.cluster_name = name;
  for (const InstanceGroupSpec& group : groups) {
    api::InstanceGroupSpec g;
    g.instance_group_name = group.name;
    g.instance_type = group.instance_type;
    g.instance_count = group.instance_count;
    g.life_cycle_config = {group.lifecycle.source_uri, group.lifecycle.on_create};
    g.threads_per_core = group.threads_per_core;
    if (!group.host_pool.empty()) g.host_pool = group.host_pool;
    if (group.warm_spares > 0) g.warm_spares = group.warm_spares;
    if (group.slurm) g.slurm_config = group.slurm->to_api();
    if (group.scheduled_update) g.scheduled_update_config = group.scheduled_update->to_json();
    out.instance_groups.push_back(std::move(g));
  }
  out.node_recovery = node_recovery;
  if (tiered_storage) out.tiered_storage_config = tiered_storage->to_api();
  if (orchestrator) out.orchestrator = orchestrator->to_api();
  if (continuous) out.node_provisioning_mode = "Continuous";
  if (shared_fs) out.shared_file_system = shared_fs->to_json();
  return out.to_json();
}

std::vector<FieldError> validate_cluster_spec(const json& request) {
  Errors errors;
  check_create(request, errors);
  return errors;
}

Result<ClusterSpec> parse_cluster_spec(const json& request) {
  Errors errors;
  ClusterSpec spec = check_create(request, errors);
  if (!errors.empty()) return validation_error(errors);
  return spec;
}

Result<ClusterSpec> apply_cluster_update(const ClusterSpec& current, const json& request) {
  Errors errors;
  ClusterSpec next = check_update(current, request, errors);
  if (!errors.empty()) return validation_error(errors);
  return next;
}

std::vector<FieldError> validate_cluster_update(const ClusterSpec& current, const json& request) {
  Errors errors;
  check_update(current, request, errors);
  return errors;
}

}  // namespace endure::spec
