// The cluster's shared file system on hosts (spec/shared_fs.h), from endured's side. The
// cluster gets an SSH key of its own (a secret, like its munge key). endured logs in to the
// file server once with the operator's key, makes the folder and lets the cluster's key
// in for sftp alone, started in that folder; every node then mounts /fsx with the
// cluster's key, never the operator's. Deleting the cluster takes its key out again.
#pragma once

#include <string>

#include "common/result.h"
#include "controller/core/config.h"
#include "spec/shared_fs.h"

namespace endure::controller {

// What every node of the cluster gets to mount /fsx.
struct SharedFsAccess {
  std::string private_key;  // the cluster's key (node::kFsxKeyPath, mode 0400)
  std::string known_hosts;  // the server's key as endured checked it (node::kFsxKnownHostsPath)
};

// Makes the cluster's key (once) and grants it on the server (once per server and folder:
// remembered in the cluster's secrets). Idempotent; a grant cut short is done again.
// Errors name SharedFileSystem and what failed: HostKeyMismatch, HostUnreachable, ...
Status grant_shared_fs(const Config& config, const std::string& cluster_id,
                       const spec::SharedFileSystemSpec& fs);

// The key and known_hosts line of a granted cluster.
Result<SharedFsAccess> shared_fs_access(const Config& config, const std::string& cluster_id);

// Takes the cluster's key out of the server's authorized_keys. The folder and its files
// stay: the data outlives the cluster, as a file system made apart from it does.
Status revoke_shared_fs(const Config& config, const std::string& cluster_id,
                        const spec::SharedFileSystemSpec& fs);

}  // namespace endure::controller
