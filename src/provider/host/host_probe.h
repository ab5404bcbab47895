// The host provider's second opinion on a silent node: a bounded look over SSH at the
// agent's process, and a way to restart the agent without touching the rest of the host.
#pragma once

#include <chrono>

#include "common/result.h"
#include "provider/host/ssh_client.h"
#include "provider/node_probe.h"

namespace endure::provider {

// A host that answers over SSH is alive (its sshd runs); one that does not answer within
// timeout is unknown: a pulled plug and a cut network look the same from here.
NodeProbe probe_host(SshClient& ssh, std::chrono::milliseconds timeout);

// Whether endure's agent service runs on the host (its supervisor or the agent itself is
// alive): what "the instance runs" means on a host. An error when the host does not answer.
Result<bool> host_service_running(SshClient& ssh, std::chrono::milliseconds timeout);

// The basic checks a host passes before it serves a node and when it comes back from
// repair: it is the host registered (its SSH host key), it answers within timeout, it runs
// Linux, endure works there as root, and its root file system has room (64 MiB) for
// endure's files. The error names the host and the check failed.
Status check_host_basics(SshClient& ssh, std::chrono::milliseconds timeout);

// Ends the agent's process: its service (systemd, or endure's supervisor) starts it again.
Status restart_host_agent(SshClient& ssh, std::chrono::milliseconds timeout);

}  // namespace endure::provider
