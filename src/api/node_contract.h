// The node contract: every path inside a node that endured, the provider, the agent and the
// auto-resume supervisor agree on, in one place. Paths are as the node sees them; a
// provider maps them onto its own storage (provider/local/local_provider.h).
#pragma once

namespace endure::node {

// endure's own folder in every node.
inline constexpr const char* kEndureDir = "/opt/endure";
// endure's programs and libraries, as installed in the node (the agent, endure-fsx,
// endure-auto-resume, auto_resume.so).
inline constexpr const char* kBinDir = "/opt/endure/bin";
inline constexpr const char* kLibDir = "/opt/endure/lib";
// srun's auto-resume supervisor, which the SPANK plugin hands a failed step to.
inline constexpr const char* kAutoResumeSupervisor = "/opt/endure/bin/endure-auto-resume";

// Files endured writes at instance creation. Secret (mode 0600): the agent's config and the
// munge key; the rest is readable by every user of the node.
// {Endpoint, InstanceId, Token, NodeName, ...}: api/node_files.h, AgentConfig.
inline constexpr const char* kAgentConfigPath = "/opt/endure/config/agent.json";
inline constexpr const char* kMungeKeyPath = "/opt/endure/config/munge.key";
// The cluster, its groups and every instance's name, address and role (what lifecycle
// scripts read, as on the cloud service).
inline constexpr const char* kResourceConfigPath = "/opt/endure/config/resource_config.json";
inline constexpr const char* kProvisioningPath = "/opt/endure/config/provisioning_parameters.json";
// Where srun's auto-resume supervisor finds endured: {Endpoint, ClusterName, Token,
// MaxResumes} (api/node_files.h, AutoResumeConfig). Its token allows only the AutoResume*
// calls.
inline constexpr const char* kAutoResumeConfigPath = "/opt/endure/config/auto_resume.json";
// The cluster memory tier (TieredStorageConfig), when the cluster enables it: where the
// node's memory store listens and the cluster's credential for it (api/node_files.h,
// MemoryStoreConfig). Readable by every user of the node: the training job is its client.
inline constexpr const char* kMemoryStoreConfigPath = "/opt/endure/config/memory_store.json";
// The port every node's memory store listens on, at the node's own address.
inline constexpr int kMemoryStorePort = 6830;
// Its objects: a tmpfs folder per instance (this prefix and the instance's id), memory that
// outlives the store's process but not the machine: a local provider removes it when it
// stops the instance, as a power-off would.
inline constexpr const char* kMemoryStoreArenaPrefix = "/dev/shm/endure-memstore-";
// endured's CA, pinned by the node's https calls to endured (hosts reach it over TLS).
inline constexpr const char* kEndureCaPath = "/opt/endure/config/endure-ca.pem";
// Slurm's files, rendered by endured from the spec (slurm/slurm_conf.h).
inline constexpr const char* kSlurmConfPath = "/etc/slurm/slurm.conf";
inline constexpr const char* kPlugstackConfPath = "/etc/slurm/plugstack.conf";
inline constexpr const char* kCliFilterPath = "/etc/slurm/cli_filter.lua";
inline constexpr const char* kHostsPath = "/etc/hosts";

// The lifecycle scripts (the group's LifeCycleConfig folder), their log and their outcome.
inline constexpr const char* kLifecycleDir = "/opt/endure/lifecycle";
inline constexpr const char* kLifecycleLog = "/opt/endure/lifecycle.log";
inline constexpr const char* kLifecycleResult = "/opt/endure/lifecycle.json";
// Scripts run at every boot after the first (what `systemctl enable` is on a real
// machine): lifecycle scripts put the daemons a node needs here.
inline constexpr const char* kBootScriptsDir = "/opt/endure/boot.d";

// Folders every node has from its first boot (lifecycle scripts install into them).
inline constexpr const char* kNodeFolders[] = {"/opt/endure/config", kBootScriptsDir,
                                               "/etc/slurm/plugstack.conf.d"};

// Mounts every node has: the cluster's shared folder and the node's own local disk.
inline constexpr const char* kSharedFsPath = "/fsx";
inline constexpr const char* kLocalDiskPath = "/local";
// The cluster's shared file system on hosts (spec/shared_fs.h): the cluster's own key for
// the file server (a secret, mode 0400) and the server's host key, as endured checked it.
inline constexpr const char* kFsxKeyPath = "/opt/endure/config/fsx_key";
inline constexpr const char* kFsxKnownHostsPath = "/opt/endure/config/fsx_known_hosts";
// Pid files the health checks, the fault drills and the provider's probe read.
inline constexpr const char* kFsxPidFile = "/opt/endure/fsx.pid";
// The agent's pid, as its node sees it: written by the node's init at each start of it.
inline constexpr const char* kAgentPidFile = "/opt/endure/agent.pid";
inline constexpr const char* kSlurmdPidFile = "/run/slurm/slurmd.pid";

}  // namespace endure::node
