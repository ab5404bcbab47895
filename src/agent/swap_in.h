// A warm spare taking a replaced worker's Slurm name, run inside the spare by endured
// (`endure-agent --swap-in NODE_NAME --partition P`): the agent's config names the node
// from now on (its boot scripts start slurmd under that name after a reboot), and slurmd is
// started again with the command line it runs with, its -N naming the new node.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace endure::agent {

Status swap_in(const std::string& config_path, const std::string& node_name,
               const std::string& partition);

// argv with its -N (or -NNAME) naming node_name, or -N node_name added when it has none.
std::vector<std::string> with_node_name(std::vector<std::string> argv,
                                        const std::string& node_name);

}  // namespace endure::agent
