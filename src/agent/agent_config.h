// What endured tells an agent at instance creation, in /opt/endure/config/agent.json.
#pragma once

#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::agent {

inline constexpr const char* kAgentConfigPath = "/opt/endure/config/agent.json";
inline constexpr const char* kLifecycleDir = "/opt/endure/lifecycle";
inline constexpr const char* kLifecycleLog = "/opt/endure/lifecycle.log";
inline constexpr const char* kLifecycleResult = "/opt/endure/lifecycle.json";
inline constexpr const char* kResourceConfigPath = "/opt/endure/config/resource_config.json";
inline constexpr const char* kProvisioningPath = "/opt/endure/config/provisioning_parameters.json";
// Where srun's auto-resume supervisor finds endured: {Endpoint, ClusterName, Token,
// MaxResumes}. Readable by every user; its token allows only the AutoResume* calls.
inline constexpr const char* kAutoResumeConfigPath = "/opt/endure/config/auto_resume.json";
inline constexpr const char* kMungeKeyPath = "/opt/endure/config/munge.key";
// Scripts run at every boot after the first (what `systemctl enable` is on a real
// machine): lifecycle scripts put the daemons a node needs here.
inline constexpr const char* kBootScriptsDir = "/opt/endure/boot.d";

struct AgentConfig {
  std::string endpoint;  // http://127.0.0.1:PORT of endured
  std::string instance_id;
  std::string token;  // the node's join credential
  std::string node_name;
  std::string group;
  std::string role;       // controller, login, worker
  std::string partition;  // worker groups only
  std::string controller_node;
  std::string on_create;  // file name inside kLifecycleDir
  int lifecycle_timeout_seconds = 900;
  double heartbeat_seconds = 1.0;
  double health_check_seconds = 2.0;
  // What the instance type promises, for the health checks.
  int cpus = 1;
  int memory_mib = 0;
  int gpus = 0;

  json to_json() const;
  static Result<AgentConfig> from_json(const json& j);
};

}  // namespace endure::agent
