// The files one program writes for another on a node, as typed messages: each lists its
// fields once (fields()), and the writer and the reader are the same code. Their paths are
// in node_contract.h.
//
//   agent.json        endured -> endure-agent         AgentConfig
//   auto_resume.json  endured -> srun's supervisor, and endure-train's rank 0
//                                                      AutoResumeConfig
//   memory_store.json endured -> endure-agent (which runs the node's memory store) and the
//                     training job (its client)     MemoryStoreConfig
//   boot.json         the local provider -> endure-agent --boot (a namespace node's init)
//                                                      LocalBoot
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/codec.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::api {

// What endured tells an agent at instance creation (node::kAgentConfigPath, mode 0600).
struct AgentConfig {
  static constexpr const char* kName = "AgentConfig";
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
  template <class S, class V>
  static void fields(S& s, V&& v) {
    using codec::defaulted;
    v("Endpoint", s.endpoint);
    v("CaFile", defaulted(s.ca_file));  // an older config has none: plain http on loopback
    v("InstanceId", s.instance_id);
    v("Token", s.token);
    v("NodeName", s.node_name);
    v("InstanceGroupName", s.group);
    v("Role", s.role);
    v("PartitionName", defaulted(s.partition));
    v("ControllerNode", defaulted(s.controller_node));
    v("OnCreate", s.on_create);
    v("LifecycleTimeoutSeconds", defaulted(s.lifecycle_timeout_seconds));
    v("HeartbeatSeconds", defaulted(s.heartbeat_seconds));
    v("HealthCheckSeconds", defaulted(s.health_check_seconds));
    v("Cpus", defaulted(s.cpus));
    v("MemoryMiB", defaulted(s.memory_mib));
    v("Gpus", defaulted(s.gpus));
  }
  json to_json() const;
  // InvalidConfig "agent.json: <field>: <rule>" when it is not one.
  static Result<AgentConfig> from_json(const json& in);
};

// The cluster memory tier on this node (node::kMemoryStoreConfigPath, readable by every user
// of the node): the share of the node's memory its store holds, the port every node's store
// listens on at the node's address, and the cluster's credential for every store (no other
// cluster's job, nor anyone off the cluster, reads or writes them). Absent: the cluster does
// not enable the tier.
struct MemoryStoreConfig {
  static constexpr const char* kName = "MemoryStoreConfig";
  std::string cluster_name;
  int memory_percent = 0;  // TieredStorageConfig.InstanceMemoryAllocationPercentage
  int port = 0;
  std::string token;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("ClusterName", s.cluster_name);
    v("InstanceMemoryAllocationPercentage", s.memory_percent);
    v("Port", s.port);
    v("Token", s.token);
  }
  json to_json() const;
  // InvalidConfig "memory_store.json: <field>: <rule>" when it is not one.
  static Result<MemoryStoreConfig> from_json(const json& in);
};

// Where srun's auto-resume supervisor and endure-train's rank 0 find endured
// (node::kAutoResumeConfigPath, readable by every user of the node: its token allows only
// the AutoResume* calls and ReportTrainingMetrics).
struct AutoResumeConfig {
  static constexpr const char* kName = "AutoResumeConfig";
  std::string endpoint;
  std::string ca_file;  // with an https endpoint: endured's CA ("" for none)
  std::string cluster_name;
  std::string token;
  int max_resumes = 3;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    using codec::defaulted;
    v("Endpoint", s.endpoint);
    v("ClusterName", s.cluster_name);
    v("Token", s.token);
    v("MaxResumes", defaulted(s.max_resumes));
    v("CaFile", defaulted(s.ca_file));
  }
  json to_json() const;
  // InvalidConfig "auto_resume.json: <field>: <rule>" when it is not one.
  static Result<AutoResumeConfig> from_json(const json& in);
};

// The file at $ENDURE_AUTO_RESUME_CONFIG, else node::kAutoResumeConfigPath.
Result<AutoResumeConfig> load_auto_resume_config();

// The IPv4 address a hosts file (node::kHostsPath's form: "ADDRESS NAME [ALIAS...]" lines)
// gives each name; nothing when there is no file. endured keeps every node's hosts file
// current as replacements move nodes, where resource_config.json keeps the addresses of
// the node's launch.
std::map<std::string, std::string> hosts_ipv4(const std::filesystem::path& path);

// How a namespace node boots (the local provider's boot.json, read by endure-agent --boot
// inside the node's new namespaces).
struct LocalBoot {
  static constexpr const char* kName = "LocalBoot";
  struct Bind {
    static constexpr const char* kName = "Bind";
    std::string source;  // host path
    std::string target;  // path inside the node
    bool file = false;   // bind a file rather than a folder
    template <class S, class V>
    static void fields(S& s, V&& v) {
      v("Source", s.source);
      v("Target", s.target);
      v("File", codec::defaulted(s.file));
    }
    json to_json() const;
    static Result<Bind> from_json(const json& in);
  };
  std::string hostname;
  std::vector<Bind> binds;
  std::string pid_file;  // where the node's host pid is written
  // The cluster's shared folder (bound inside the node). The node sees it at /fsx through
  // its own endure-fsx (a FUSE file system), so that /fsx can hang for one node the way a
  // network file system does; without FUSE on the host it is bound there directly.
  std::string fsx_backing;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("Hostname", s.hostname);
    v("Binds", s.binds);
    v("PidFile", s.pid_file);
    v("FsxBacking", codec::defaulted(s.fsx_backing));
  }
  json to_json() const;
  // InvalidBoot "boot.json: <field>: <rule>" when it is not one.
  static Result<LocalBoot> from_json(const json& in);
};

}  // namespace endure::api
