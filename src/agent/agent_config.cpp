#include "agent/agent_config.h"

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
  AgentConfig c;
  try {
    c.endpoint = j.at("Endpoint").get<std::string>();
    c.ca_file = j.value("CaFile", "");
    c.instance_id = j.at("InstanceId").get<std::string>();
    c.token = j.at("Token").get<std::string>();
    c.node_name = j.at("NodeName").get<std::string>();
    c.group = j.at("InstanceGroupName").get<std::string>();
    c.role = j.at("Role").get<std::string>();
    c.partition = j.value("PartitionName", "");
    c.controller_node = j.value("ControllerNode", "");
    c.on_create = j.at("OnCreate").get<std::string>();
    c.lifecycle_timeout_seconds = j.value("LifecycleTimeoutSeconds", 900);
    c.heartbeat_seconds = j.value("HeartbeatSeconds", 1.0);
    c.health_check_seconds = j.value("HealthCheckSeconds", 2.0);
    c.cpus = j.value("Cpus", 1);
    c.memory_mib = j.value("MemoryMiB", 0);
    c.gpus = j.value("Gpus", 0);
  } catch (const std::exception& e) {
    return make_error("InvalidConfig", std::string("agent.json: ") + e.what());
  }
  return c;
}

}  // namespace endure::agent
