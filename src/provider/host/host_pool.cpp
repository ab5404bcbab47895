#include "provider/host/host_pool.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "api/wire.h"
#include "spec/ssh_fields.h"

namespace endure::provider {

namespace {

using spec::FieldError;
using Errors = std::vector<FieldError>;

const std::vector<std::string_view> kFileFields = {"Pools"};
const std::vector<std::string_view> kPoolFields = {"PoolName", "IdentityFile", "User",
                                                   "Port",     "PowerCommand", "Hosts"};
const std::vector<std::string_view> kHostFields = {
    "HostName", "Address", "Port", "User", "HostKey", "IdentityFile", "PowerCommand"};
const std::vector<std::string> kPlaceholders = {"host", "address", "action"};

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

bool matches(const std::string& s, const char* pattern) {
  return std::regex_match(s, std::regex(pattern));
}

std::optional<std::string> check_power_command(const std::string& command) {
  std::string known = "{host}, {address}, {action}";
  bool has_action = false;
  for (size_t open = command.find('{'); open != std::string::npos;
       open = command.find('{', open + 1)) {
    size_t close = command.find('}', open);
    if (close == std::string::npos) return "has a { without its }; placeholders: " + known;
    std::string name = command.substr(open + 1, close - open - 1);
    if (std::find(kPlaceholders.begin(), kPlaceholders.end(), name) == kPlaceholders.end()) {
      return "uses {" + name + "}; placeholders: " + known;
    }
    has_action = has_action || name == "action";
  }
  if (!has_action) return "must contain {action} (on, off or reset)";
  return std::nullopt;
}

std::optional<int> read_port(const json& obj, const std::string& path, Errors& errors) {
  auto it = obj.find("Port");
  if (it == obj.end()) return std::nullopt;
  if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 65535) {
    errors.push_back({path + ".Port", "must be an integer from 1 to 65535"});
    return std::nullopt;
  }
  return it->get<int>();
}

// The fields a pool gives its hosts unless a host says otherwise.
struct PoolDefaults {
  std::optional<std::string> identity_file, user, power_command;
  std::optional<int> port;
};

PoolDefaults read_shared(const json& obj, const std::string& path, Errors& errors) {
  PoolDefaults d;
  d.identity_file =
      spec::read_string_field(obj, "IdentityFile", path + ".IdentityFile", errors, false);
  if (d.identity_file && d.identity_file->front() != '/') {
    errors.push_back({path + ".IdentityFile", "must be an absolute path"});
  }
  d.user = spec::read_string_field(obj, "User", path + ".User", errors, false);
  if (d.user && !spec::valid_user(*d.user)) {
    errors.push_back({path + ".User", spec::kUserRule});
  }
  d.power_command =
      spec::read_string_field(obj, "PowerCommand", path + ".PowerCommand", errors, false);
  if (d.power_command) {
    if (auto why = check_power_command(*d.power_command)) {
      errors.push_back({path + ".PowerCommand", *why});
    }
  }
  d.port = read_port(obj, path, errors);
  return d;
}

std::vector<HostPool> check(const json& file, Errors& errors) {
  std::vector<HostPool> pools;
  if (!file.is_object()) {
    errors.push_back({"", "must be a JSON object with Pools"});
    return pools;
  }
  spec::check_known_keys(file, "", kFileFields, errors);
  auto list = file.find("Pools");
  if (list == file.end() || !list->is_array() || list->empty() ||
      list->size() > static_cast<size_t>(kMaxPools)) {
    errors.push_back({"Pools", "must be an array of 1 to " + std::to_string(kMaxPools) + " pools"});
    return pools;
  }
  std::set<std::string> pool_names, host_names;
  std::map<std::string, std::string> endpoints;  // "address:port" → the path that has it
  for (size_t p = 0; p < list->size(); ++p) {
    const json& pj = (*list)[p];
    std::string ppath = at("Pools", p);
    if (!pj.is_object()) {
      errors.push_back({ppath, "must be an object"});
      continue;
    }
    spec::check_known_keys(pj, ppath, kPoolFields, errors);
    HostPool pool;
    if (auto name = spec::read_string_field(pj, "PoolName", ppath + ".PoolName", errors, true)) {
      if (!matches(*name, "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")) {
        errors.push_back({ppath + ".PoolName",
                          "must be 1 to 63 letters, digits or hyphens, starting and ending with a "
                          "letter or digit"});
      } else if (!pool_names.insert(*name).second) {
        errors.push_back({ppath + ".PoolName", "'" + *name + "' names two pools"});
      }
      pool.name = *name;
    }
    PoolDefaults shared = read_shared(pj, ppath, errors);
    auto hosts = pj.find("Hosts");
    if (hosts == pj.end() || !hosts->is_array() || hosts->empty() ||
        hosts->size() > static_cast<size_t>(kMaxHostsPerPool)) {
      errors.push_back({ppath + ".Hosts",
                        "must be an array of 1 to " + std::to_string(kMaxHostsPerPool) + " hosts"});
      continue;
    }
    for (size_t h = 0; h < hosts->size(); ++h) {
      const json& hj = (*hosts)[h];
      std::string hpath = at(ppath + ".Hosts", h);
      if (!hj.is_object()) {
        errors.push_back({hpath, "must be an object"});
        continue;
      }
      spec::check_known_keys(hj, hpath, kHostFields, errors);
      PoolHost host;
      if (auto name = spec::read_string_field(hj, "HostName", hpath + ".HostName", errors, true)) {
        std::string lower = *name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (!spec::valid_hostname(*name)) {
          errors.push_back({hpath + ".HostName", "must be a hostname (RFC 1123)"});
        } else if (!host_names.insert(lower).second) {
          errors.push_back({hpath + ".HostName", "'" + *name + "' names two hosts"});
        }
        host.ssh.name = *name;
      }
      if (auto address = spec::read_string_field(hj, "Address", hpath + ".Address", errors, true)) {
        if (!spec::valid_address(*address)) {
          errors.push_back({hpath + ".Address", "must be an IP address or a DNS name"});
        }
        host.ssh.address = *address;
      }
      PoolDefaults own = read_shared(hj, hpath, errors);
      host.ssh.port = own.port.value_or(shared.port.value_or(22));
      host.ssh.user = own.user.value_or(shared.user.value_or("root"));
      auto identity = own.identity_file ? own.identity_file : shared.identity_file;
      if (!identity) {
        errors.push_back({hpath + ".IdentityFile",
                          "is required (on the host or on its pool): the private key endured "
                          "logs in with"});
      } else {
        host.ssh.identity_file = *identity;
      }
      host.power_command = own.power_command.value_or(shared.power_command.value_or(""));
      if (auto key = spec::read_string_field(hj, "HostKey", hpath + ".HostKey", errors, true)) {
        if (auto why = spec::check_host_key(*key)) errors.push_back({hpath + ".HostKey", *why});
        host.ssh.host_key = *key;
      }
      if (!host.ssh.address.empty()) {
        std::string endpoint = host.ssh.address + ":" + std::to_string(host.ssh.port);
        auto [it, fresh] = endpoints.emplace(endpoint, hpath);
        if (!fresh) {
          errors.push_back({hpath + ".Address", endpoint + " is also " + it->second + "'s"});
        }
      }
      pool.hosts.push_back(std::move(host));
    }
    pools.push_back(std::move(pool));
  }
  return pools;
}

}  // namespace

Result<std::vector<HostPool>> parse_host_pools(const json& file) {
  Errors errors;
  auto pools = check(file, errors);
  if (!errors.empty()) return make_error(api::kValidationException, spec::describe(errors));
  return pools;
}

std::vector<FieldError> validate_host_pools(const json& file) {
  Errors errors;
  (void)check(file, errors);
  return errors;
}

std::string power_command_for(const PoolHost& host, const std::string& action) {
  std::string out;
  const std::string& t = host.power_command;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{') {
      size_t close = t.find('}', i);
      std::string name = t.substr(i + 1, close - i - 1);
      out += name == "host" ? host.ssh.name : name == "address" ? host.ssh.address : action;
      i = close;
      continue;
    }
    out += t[i];
  }
  return out;
}

}  // namespace endure::provider
