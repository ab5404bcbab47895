// How a command runs inside a namespace node, written once for the two programs that do it:
// the local provider (endured's exec into its nodes) and `endure exec` (the operator's, with
// the node's pid from GetNodeExecTarget).
#pragma once

#include <string>
#include <vector>

namespace endure::api {

// PATH inside a node.
inline constexpr const char* kNodePath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The argv that runs `command` inside the node whose first process has host pid `pid`, with
// a clean environment (HOSTNAME set when node_name is not empty; the caller's TERM kept).
std::vector<std::string> node_exec_argv(int pid, const std::string& node_name,
                                        const std::vector<std::string>& command);

}  // namespace endure::api
