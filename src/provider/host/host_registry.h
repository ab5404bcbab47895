// The registered hosts as endured acts on them: host_inventory.h's decisions applied to the
// store's records under one lock, so that a registration, a node taking a host and a host
// returned from repair never interleave.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "provider/host/host_inventory.h"
#include "provider/host/ssh_client.h"
#include "store/store.h"

namespace endure::provider {

class HostRegistry {
 public:
  // ssh_root: the folder of each host's SSH state (its known_hosts and connection socket).
  HostRegistry(store::Store& store, std::filesystem::path ssh_root);

  // Registers a pool file's content (host_pool.h), merged with the hosts known; every
  // host after it, or the file's errors (nothing changes then).
  Result<std::vector<HostRecord>> register_pools(const json& file);

  // The hosts, by pool and place in the pool file; pool empty: every pool.
  Result<std::vector<HostRecord>> list(const std::string& pool = "");
  bool has_pool(const std::string& pool);
  std::optional<HostRecord> find(const std::string& name);

  // The host an instance was given, in any state but Available (a Quarantined one keeps
  // whom it served), if any.
  std::optional<HostRecord> host_of(const std::string& cluster_id, const std::string& instance_id);

  // Gives an instance the next Available host of pool not in tried, now Bootstrapping for
  // it; nullopt when the pool has none left.
  Result<std::optional<HostRecord>> claim(const std::string& pool, const std::string& cluster_id,
                                          const std::string& instance_id,
                                          const std::set<std::string>& tried);
  // Moves a host to state (check_host_change's rules): Available clears whom it served,
  // Quarantined keeps the reason.
  Status change(const std::string& name, HostState to, const std::string& reason = "");

  // A Quarantined host back to Available once check passes; a failed check keeps it
  // Quarantined with the check's error as its reason.
  Result<HostRecord> return_host(const std::string& name,
                                 const std::function<Status(const HostRecord&)>& check);

  // A client for the host, its SSH state under ssh_root.
  SshClient ssh(const HostRecord& record) const;

 private:
  std::vector<HostRecord> read_all();  // rows that no longer read are skipped (logged)

  store::Store& store_;
  std::filesystem::path ssh_root_;
  std::mutex mu_;
};

// A unix socket path holds at most 107 bytes: the SSH state root for an endured home, short
// enough for a connection socket under it (home/ssh, else /run/endure-ssh-<hash of home>).
std::filesystem::path ssh_state_root(const std::filesystem::path& home);

}  // namespace endure::provider
