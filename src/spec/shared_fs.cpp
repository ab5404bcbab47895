#include "spec/shared_fs.h"

#include <regex>
#include <string_view>

#include "spec/cluster_spec.h"
#include "spec/ssh_fields.h"

namespace endure::spec {

namespace {

constexpr const char* kField = "SharedFileSystem";
const std::vector<std::string_view> kFields = {"DnsName",   "Port",    "User",
                                               "MountName", "HostKey", "IdentityFile"};

std::string at(std::string_view key) { return join_path(kField, key); }

// The folder goes into sshfs's arguments and sshd's forced command: a plain absolute path.
std::optional<std::string> check_mount_name(const std::string& path) {
  if (path.front() != '/' || path == "/") return "must be an absolute path other than /";
  if (!std::regex_match(path, std::regex("^[A-Za-z0-9._/-]+$"))) {
    return "may hold only letters, digits and . _ - /";
  }
  if (path.find("/../") != std::string::npos || path.ends_with("/..") ||
      path.find("/./") != std::string::npos || path.ends_with("/.")) {
    return "must not hold . or .. parts";
  }
  return std::nullopt;
}

}  // namespace

json SharedFileSystemSpec::to_json() const {
  return {{"DnsName", dns_name},     {"Port", port},        {"User", user},
          {"MountName", mount_name}, {"HostKey", host_key}, {"IdentityFile", identity_file}};
}

std::optional<SharedFileSystemSpec> read_shared_fs(const json& request,
                                                   std::vector<FieldError>& errors) {
  auto it = request.find(kField);
  if (it == request.end()) return std::nullopt;
  if (!it->is_object()) {
    errors.push_back({kField, "must be an object"});
    return std::nullopt;
  }
  const json& obj = *it;
  check_known_keys(obj, kField, kFields, errors);
  SharedFileSystemSpec fs;
  std::size_t before = errors.size();
  if (auto name = read_string_field(obj, "DnsName", at("DnsName"), errors, true)) {
    if (!valid_address(*name))
      errors.push_back({at("DnsName"), "must be an IP address or a DNS name"});
    fs.dns_name = *name;
  }
  if (auto port = obj.find("Port"); port != obj.end()) {
    if (!port->is_number_integer() || port->get<long long>() < 1 ||
        port->get<long long>() > 65535) {
      errors.push_back({at("Port"), "must be an integer from 1 to 65535"});
    } else {
      fs.port = port->get<int>();
    }
  }
  if (auto user = read_string_field(obj, "User", at("User"), errors, false)) {
    if (!valid_user(*user)) errors.push_back({at("User"), kUserRule});
    fs.user = *user;
  }
  if (auto mount = read_string_field(obj, "MountName", at("MountName"), errors, true)) {
    if (auto why = check_mount_name(*mount)) errors.push_back({at("MountName"), *why});
    fs.mount_name = *mount;
  }
  if (auto key = read_string_field(obj, "HostKey", at("HostKey"), errors, true)) {
    if (auto why = check_host_key(*key)) errors.push_back({at("HostKey"), *why});
    fs.host_key = *key;
  }
  if (auto identity = read_string_field(obj, "IdentityFile", at("IdentityFile"), errors, true)) {
    if (identity->front() != '/') {
      errors.push_back({at("IdentityFile"),
                        "must be an absolute path (endured's private key for the file server)"});
    }
    fs.identity_file = *identity;
  }
  if (errors.size() != before) return std::nullopt;
  return fs;
}

}  // namespace endure::spec
