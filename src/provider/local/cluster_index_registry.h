// Cluster indexes on one host. A cluster's index picks its loopback addresses and Slurm
// ports (spec/layout.h); every endured on the host binds them on the same network stack,
// so two controllers' clusters must never share an index. Each index in use is one file in
// a host-wide folder, holding the path of the cluster folder that claimed it; a claim whose
// folder is gone (its controller deleted the cluster without releasing, or its home was
// removed) is free again. The default folder is under /run: a host reboot clears it, and
// takes every local instance with it.
#pragma once

#include <filesystem>

#include "common/result.h"

namespace endure::provider {

inline constexpr const char* kHostClusterIndexDir = "/run/endure/cluster-index";

class ClusterIndexRegistry {
 public:
  // dir: the host-wide folder; indexes run from 1 to max_index.
  ClusterIndexRegistry(std::filesystem::path dir, int max_index);

  // Claims an index for the cluster whose folder is `owner` (made here when missing, so
  // that a fresh claim is never taken for a stale one). wanted > 0: exactly that index,
  // which must be free or already the owner's (a stored cluster keeps its own). wanted 0:
  // the index the owner already holds, else the smallest free one. Fails with
  // ResourceInUse when the index (or every index) is held by another live cluster.
  Result<int> claim(const std::filesystem::path& owner, int wanted = 0);

  // Gives back every index the owner holds. Nothing to give back is not an error.
  Status release(const std::filesystem::path& owner);

 private:
  std::filesystem::path dir_;
  int max_index_;
};

}  // namespace endure::provider
