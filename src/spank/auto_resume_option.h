// The plugin's decisions as plain functions (unit-tested without srun): the value of
// --auto-resume, the plugin's plugstack.conf arguments, and the supervisor's command line.
#pragma once

#include <string>
#include <vector>

#include "api/node_contract.h"

namespace endure::spank {

// Environment set in the srun that the supervisor runs, so that it does not supervise again.
inline constexpr const char* kSupervisedEnv = "ENDURE_AUTO_RESUME_SUPERVISED";
inline constexpr const char* kDefaultSupervisor = node::kAutoResumeSupervisor;

// --auto-resume's argument: absent means 1. Returns 0 or 1, or -1 when it is neither
// (with the reason in *error).
int parse_auto_resume(const char* optarg, std::string* error);

struct PluginArgs {
  std::string supervisor = kDefaultSupervisor;
};
// plugstack.conf arguments: supervisor=PATH. An unknown one is an error naming it.
bool parse_plugin_args(const std::vector<std::string>& args, PluginArgs* out, std::string* error);

// The supervisor's argv for a srun whose own argv is srun_argv (from /proc/self/cmdline)
// and whose executable is srun_exe: supervisor --srun EXE -- ARGV...
std::vector<std::string> supervisor_argv(const std::string& supervisor,
                                         const std::string& srun_exe,
                                         const std::vector<std::string>& srun_argv);

// A NUL-separated /proc/PID/cmdline as a list.
std::vector<std::string> split_cmdline(const std::string& raw);

}  // namespace endure::spank
