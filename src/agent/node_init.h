// pid 1 of a local instance: after the local boot it runs the agent as its child, reaps
// every orphan of the node, and starts the agent again when it exits or when endured asks
// (SIGUSR1 from the host: an agent that went silent on a live node is restarted, the node
// is not). Stays single-threaded, so that its fork is safe. A real host's service manager
// does the same for the agent there.
#pragma once

#include <functional>

namespace endure::agent {

// Runs agent(restarted) in a child until SIGTERM or SIGINT, which it passes on to the
// agent; returns the agent's exit code then. restarted is false for the first start only.
int run_as_node_init(const std::function<int(bool restarted)>& agent);

}  // namespace endure::agent
