// Host pools: the machines a user owns, as the pool file registers them. An instance group
// draws its nodes from a pool; endured reaches each host only over SSH, as registered here.
//
//   {"Pools": [{"PoolName": "rack-a",
//               "IdentityFile": "/etc/endure/ssh/id_ed25519",       (default for its hosts)
//               "PowerCommand": "ipmitool -H {host}-bmc ... chassis power {action}",
//               "Hosts": [{"HostName": "gpu-01", "Address": "gpu-01.rack-a.example", "Port": 22,
//                          "User": "root", "HostKey": "ssh-ed25519 AAAA..." | "SHA256:..."}]}]}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "provider/host/ssh_client.h"
#include "spec/cluster_spec.h"

namespace endure::provider {

struct PoolHost {
  SshTarget ssh;  // ssh.name is the host's name
  // Powers the host on, off or reset: the pool's template with {host}, {address} and
  // {action} (on, off, reset) filled in. Empty: reboot over SSH, and no power on.
  std::string power_command;
};

struct HostPool {
  std::string name;
  std::vector<PoolHost> hosts;
};

constexpr int kMaxPools = 100;
constexpr int kMaxHostsPerPool = 1000;

// Checks a pool file and reads it. Every rule broken is reported at once, each with its
// field path ("Pools[0].Hosts[2].HostKey: ..."), as ValidationException.
Result<std::vector<HostPool>> parse_host_pools(const json& file);
std::vector<spec::FieldError> validate_host_pools(const json& file);

// The power command for a host and an action ("on", "off", "reset").
std::string power_command_for(const PoolHost& host, const std::string& action);

}  // namespace endure::provider
