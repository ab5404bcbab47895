// The gauges an agent sends with each heartbeat (AgentHeartbeatRequest::metrics, a JSON
// object {key: number}), named once for both sides: the agent writes the keys, endured's
// /metrics shows each as its metric, labelled by cluster and node, and ignores any other key.
#pragma once

#include <array>

namespace endure::api::gauge {

inline constexpr const char* kLoad1 = "load1";
inline constexpr const char* kMemTotalBytes = "mem_total_bytes";
inline constexpr const char* kMemAvailableBytes = "mem_available_bytes";
inline constexpr const char* kLocalDiskSizeBytes = "local_disk_size_bytes";
inline constexpr const char* kLocalDiskFreeBytes = "local_disk_free_bytes";
inline constexpr const char* kFsxProbeSeconds = "fsx_probe_seconds";
inline constexpr const char* kGpus = "gpus";
inline constexpr const char* kGpuEccUncorrected = "gpu_ecc_uncorrected";
// The node's memory store (the cluster memory tier), when the cluster enables it.
inline constexpr const char* kMemStoreCapacityBytes = "memstore_capacity_bytes";
inline constexpr const char* kMemStoreUsedBytes = "memstore_used_bytes";
inline constexpr const char* kMemStorePutBytes = "memstore_put_bytes";
inline constexpr const char* kMemStoreGetBytes = "memstore_get_bytes";
inline constexpr const char* kMemStoreRefusedPuts = "memstore_refused_puts";
inline constexpr const char* kMemStoreEvictedSteps = "memstore_evicted_steps";
inline constexpr const char* kMemStoreShardGets = "memstore_shard_gets";
inline constexpr const char* kMemStoreReplicationLagSeconds = "memstore_replication_lag_seconds";
inline constexpr const char* kMemStoreLastCommitSeconds = "memstore_last_commit_seconds";

struct NodeGauge {
  const char* key;     // in the heartbeat
  const char* metric;  // on /metrics
  const char* help;
};

inline constexpr std::array kNodeGauges = {
    NodeGauge{kLoad1, "endure_node_load1", "The node's 1-minute load average."},
    NodeGauge{kMemTotalBytes, "endure_node_memory_total_bytes", "The node's MemTotal."},
    NodeGauge{kMemAvailableBytes, "endure_node_memory_available_bytes", "The node's MemAvailable."},
    NodeGauge{kLocalDiskSizeBytes, "endure_node_local_disk_size_bytes",
              "Size of the node's local disk."},
    NodeGauge{kLocalDiskFreeBytes, "endure_node_local_disk_free_bytes",
              "Free space of the node's local disk for unprivileged writers."},
    NodeGauge{kFsxProbeSeconds, "endure_node_fsx_probe_seconds",
              "Time of the node's last /fsx write-read probe (the timeout when it hung)."},
    NodeGauge{kGpus, "endure_node_gpus", "GPUs NVML sees on the node."},
    NodeGauge{kGpuEccUncorrected, "endure_node_gpu_ecc_uncorrected_errors",
              "Uncorrected volatile ECC errors over the node's GPUs, as NVML counts them."},
    NodeGauge{kMemStoreCapacityBytes, "endure_node_memory_store_capacity_bytes",
              "The node's memory store's share of its memory (TieredStorageConfig)."},
    NodeGauge{kMemStoreUsedBytes, "endure_node_memory_store_used_bytes",
              "Bytes the node's memory store holds, writes under way included."},
    NodeGauge{kMemStorePutBytes, "endure_node_memory_store_put_bytes",
              "Bytes saved into the node's memory store since it started (shards and replicas)."},
    NodeGauge{kMemStoreGetBytes, "endure_node_memory_store_get_bytes",
              "Bytes read from the node's memory store since it started (restores)."},
    NodeGauge{kMemStoreRefusedPuts, "endure_node_memory_store_refused_puts",
              "Saves the node's memory store refused since it started, for want of room."},
    NodeGauge{kMemStoreEvictedSteps, "endure_node_memory_store_evicted_steps",
              "Steps the node's memory store dropped for room since it started."},
    NodeGauge{kMemStoreShardGets, "endure_node_memory_store_shard_gets",
              "Shards read whole from the node's memory store since it started (restores)."},
    NodeGauge{kMemStoreReplicationLagSeconds, "endure_node_memory_store_replication_lag_seconds",
              "Time the save under way in the node's memory store has waited for its manifest "
              "(the longest over runs; 0 when none waits)."},
    NodeGauge{kMemStoreLastCommitSeconds, "endure_node_memory_store_last_commit_seconds",
              "Time from the first object to the manifest of the step the node's memory store "
              "completed last."},
};

}  // namespace endure::api::gauge
