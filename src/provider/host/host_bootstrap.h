// A host made an endure node over SSH: endure's node software and the instance's files
// copied, its agent installed as a boot service and started. Every step is idempotent, so a
// bootstrap cut short (endured killed, the host gone) is finished by running it again.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "provider/host/ssh_client.h"
#include "provider/node_provider.h"

namespace endure::provider {

// Where bootstrap_host puts its service on a host (the node contract's paths aside).
inline constexpr const char* kHostServicePidFile = "/run/endure-agent-service.pid";
inline constexpr const char* kHostAgentLog = "/var/log/endure-agent.log";

// Where endure's node programs are on endured's machine.
struct NodeSoftware {
  std::filesystem::path bin_dir;  // endure-agent, endure-auto-resume, endure-fsx
  std::filesystem::path lib_dir;  // auto_resume.so (the SPANK plugin)
};

// Copies what differs of the software, writes request.files (0644) and secret_files (0400,
// the munge key among them) and endured's CA (node::kEndureCaPath), copies the lifecycle
// folder, installs the agent as a boot service (where systemd runs, the unit the Debian
// package ships too, kAgentUnit; else a block in /etc/rc.local) and starts it unless it runs.
// Secrets travel on stdin only.
Status bootstrap_host(SshClient& ssh, const NodeSoftware& software, const LaunchRequest& request,
                      const std::string& endure_ca_pem);

// Undoes bootstrap_host: every process endure started on the host is killed (the agent's
// service, the daemons the lifecycle scripts started, by their pid files), /fsx unmounted,
// and endure's files and boot service removed. The host is then as the pool registered it.
Status clean_host(SshClient& ssh);

// The agent's supervisor on a host without systemd: restarts the agent when it exits.
// Exposed for tests; installed at node::kBinDir/endure-agent-service.
std::string agent_service_script();

}  // namespace endure::provider
