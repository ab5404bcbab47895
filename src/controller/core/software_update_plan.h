// UpdateClusterSoftware's plan: which nodes get fresh software, in which order and how many
// at once (the cloud API's RollingUpdatePolicy), kept in the cluster's row while it runs.
// Parsing the request and choosing the next batch are pure functions, unit-tested alone.
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "spec/layout.h"

namespace endure::controller {

inline constexpr int kMaxWaitIntervalSeconds = 3600;

struct SoftwareUpdatePlan {
  struct InFlight {
    std::string node;         // node name
    std::string instance_id;  // the instance being updated (a replacement is new software)
  };
  std::string id;                      // "su-" + hex
  std::vector<std::string> groups;     // the instance groups it updates
  int batch_size = 1;                  // nodes updated at once
  int wait_seconds = 0;                // WaitIntervalInSeconds between batches
  std::vector<std::string> remaining;  // not started yet, in order (the controller last)
  std::vector<InFlight> in_flight;     // draining, or updating now
  double batch_done_at = 0;            // when the last batch finished (0: none yet)
  int largest_batch = 0;               // the most nodes ever in flight at once

  json to_json() const;
  static Result<SoftwareUpdatePlan> from_json(const json& j);
};

// The plan of an UpdateClusterSoftware request ({InstanceGroups?, DeploymentConfig?,
// ImageId?}) on a cluster of this layout, or a ValidationException naming the field.
// Defaults: every group, one node at a time, no wait. Workers go first, the controller
// node last and alone (its slurmctld restarts).
Result<SoftwareUpdatePlan> plan_software_update(const json& request,
                                                const spec::ClusterLayout& layout);

// The nodes to start now: none while a batch is in flight or its wait interval runs,
// else up to batch_size from the front of remaining (the controller node only alone).
std::vector<std::string> next_batch(const SoftwareUpdatePlan& plan,
                                    const spec::ClusterLayout& layout, double now);

}  // namespace endure::controller
