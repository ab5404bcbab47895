// What endured tells an agent at instance creation, in node::kAgentConfigPath.
#pragma once

#include <string>

#include "api/node_contract.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::agent {

struct AgentConfig {
  std::string endpoint;  // http://127.0.0.1:PORT of endured, or https://HOST:PORT
  std::string ca_file;   // with https: the CA endured's certificate must come from
  std::string instance_id;
  std::string token;  // the node's join credential
  std::string node_name;
  std::string group;
  std::string role;       // controller, login, worker
  std::string partition;  // worker groups only
  std::string controller_node;
  std::string on_create;  // file name inside node::kLifecycleDir
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
