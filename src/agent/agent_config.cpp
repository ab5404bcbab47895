#include "agent/agent_config.h"

#include <optional>
#include <utility>

#include "api/codec.h"

namespace endure::agent {

json AgentConfig::to_json() const {
  return {{"Endpoint", endpoint},
          {"CaFile", ca_file},
          {"InstanceId", instance_id},
          {"Token", token},
          {"NodeName", node_name},
          {"InstanceGroupName", group},
          {"Role", role},
          {"PartitionName", partition},
          {"ControllerNode", controller_node},
          {"OnCreate", on_create},
          {"LifecycleTimeoutSeconds", lifecycle_timeout_seconds},
          {"HeartbeatSeconds", heartbeat_seconds},
          {"HealthCheckSeconds", health_check_seconds},
          {"Cpus", cpus},
          {"MemoryMiB", memory_mib},
          {"Gpus", gpus}};
}

Result<AgentConfig> AgentConfig::from_json(const json& j) {
  auto invalid = [](const std::string& rule) {
    return make_error("InvalidConfig", "agent.json: " + rule);
  };
  if (!j.is_object()) return invalid("must be a JSON object");
  AgentConfig c;
  api::codec::Reader required(j);
  for (auto [key, out] : {std::pair{"Endpoint", &c.endpoint},
                          {"InstanceId", &c.instance_id},
                          {"Token", &c.token},
                          {"NodeName", &c.node_name},
                          {"InstanceGroupName", &c.group},
                          {"Role", &c.role},
                          {"OnCreate", &c.on_create}}) {
    required(key, *out);
  }
  if (required.error()) return invalid(*required.error());
  // The others keep their defaults when absent; present, they must have their type (a
  // number beyond an int is refused, not converted).
  std::optional<std::string> error;
  auto optional = [&](const char* key, auto& out) {
    if (!error) error = api::codec::decode_if_present(j, key, out);
  };
  optional("CaFile", c.ca_file);
  optional("PartitionName", c.partition);
  optional("ControllerNode", c.controller_node);
  optional("LifecycleTimeoutSeconds", c.lifecycle_timeout_seconds);
  optional("HeartbeatSeconds", c.heartbeat_seconds);
  optional("HealthCheckSeconds", c.health_check_seconds);
  optional("Cpus", c.cpus);
  optional("MemoryMiB", c.memory_mib);
  optional("Gpus", c.gpus);
  if (error) return invalid(*error);
  return c;
}

}  // namespace endure::agent
