// SharedFileSystem, endure's field beside the cloud spec's: the network file system that
// a cluster on hosts mounts at /fsx, in the part the cloud spec gives to FSx for Lustre
// (its DNS name and mount name). Here it is a folder of a file server reached over SSH
// (sshfs): endured logs in to it with IdentityFile to make the folder and let the
// cluster's own key in; the nodes mount it with that key alone.
//
//   "SharedFileSystem": {"DnsName": "fs-01.rack-a.example", "Port": 22, "User": "root",
//                        "MountName": "/export/ml", "HostKey": "ssh-ed25519 AAAA...",
//                        "IdentityFile": "/etc/endure/ssh/id_ed25519"}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace endure::spec {

struct FieldError;  // spec/cluster_spec.h

struct SharedFileSystemSpec {
  std::string dns_name;       // DnsName: the file server's address
  int port = 22;              // Port: its SSH port
  std::string user = "root";  // User: who owns MountName there
  std::string mount_name;     // MountName: the folder on the server that is /fsx
  std::string host_key;       // HostKey: its SSH host key or SHA256: fingerprint
  std::string identity_file;  // IdentityFile: endured's key for it, on endured's machine

  json to_json() const;
  bool operator==(const SharedFileSystemSpec&) const = default;
};

// Reads request["SharedFileSystem"] (nullopt when absent), recording each broken rule at
// its path ("SharedFileSystem.MountName").
std::optional<SharedFileSystemSpec> read_shared_fs(const json& request,
                                                   std::vector<FieldError>& errors);

}  // namespace endure::spec
