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

// Ends the agent's process: its service (systemd, or endure's supervisor) starts it again.
Status restart_host_agent(SshClient& ssh, std::chrono::milliseconds timeout);

}  // namespace endure::provider
