// TieredStorageConfig, the cloud spec's field for the cluster memory tier: with Enable,
// every node gives a share of its memory to a store that keeps the training job's
// checkpoints (the node's memory_store.json, api/node_files.h MemoryStoreConfig).
//
//   "TieredStorageConfig": {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
//
// Mode is required. The percentage is 0 to 100, as on the cloud service; with Enable,
// absent or 0 means kDefaultMemoryPercent (a store of no memory would be Disable by another
// name), and DescribeCluster shows the share the nodes got. With Disable it means nothing
// and is kept as given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/messages.h"
#include "common/json.h"

namespace endure::spec {

struct FieldError;  // spec/cluster_spec.h

// The share of a node's memory its store holds when Enable names none: room for a few
// checkpoint copies (own and peers') on a training node, most of the memory left to the job.
inline constexpr int kDefaultMemoryPercent = 20;

struct TieredStorageSpec {
  api::TieredStorageMode mode = api::TieredStorageMode::kDisable;  // Mode
  // InstanceMemoryAllocationPercentage: with Enable always set (the default filled in).
  std::optional<int> memory_percent;

  bool enabled() const { return mode == api::TieredStorageMode::kEnable; }
  api::TieredStorageConfig to_api() const;  // as DescribeCluster shows it
  bool operator==(const TieredStorageSpec&) const = default;
};

// Whether the cluster's nodes get a memory store (absent: never enabled).
inline bool memory_tier_on(const std::optional<TieredStorageSpec>& tier) {
  return tier && tier->enabled();
}

// Reads request["TieredStorageConfig"] (nullopt when absent or invalid), recording each
// broken rule at its path ("TieredStorageConfig.Mode").
std::optional<TieredStorageSpec> read_tiered_storage(const json& request,
                                                     std::vector<FieldError>& errors);

// What the cluster's nodes are given: "" when the tier is off (no memory_store.json),
// else "Enable, N %". endured records it on the cluster once every running node holds it.
std::string memory_store_setting(const std::optional<TieredStorageSpec>& tier);

}  // namespace endure::spec
