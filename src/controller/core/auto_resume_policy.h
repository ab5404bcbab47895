// Does a node fault explain a failed step? The decision srun's auto-resume supervisor asks
// endured for, as a plain function of what endured knows of the step's nodes, so that it
// is unit-tested without a cluster.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/states.h"

namespace endure::controller {

// One node of a failed step, as endured sees it.
struct StepNode {
  std::string name;
  bool known = false;      // a node of this cluster
  std::optional<api::NodeStatus> status;        // its live instance's (none: no live one)
  std::optional<api::RecoveryAction> recovery;  // the recovery under way, if any
  double launch_time = 0;  // when its live instance was launched
  double last_fault_time =
      0;                   // when its latest verdict was given, on any of its instances (0: none)
  std::string last_fault;  // that verdict
  double last_heartbeat = 0;  // time of its latest heartbeat (0: none heard)
};

enum class StepDecision {
  kFault,    // a node fault explains the failure: re-run once the nodes are back
  kHealthy,  // every node reported healthy after the failure: the application failed
  kPending,  // not known yet: ask again shortly
};

struct StepJudgement {
  StepDecision decision = StepDecision::kPending;
  std::string reason;               // the fault (kFault), or what is awaited (kPending)
  std::vector<std::string> faulty;  // the nodes at fault
};

// A node is at fault when, since the step started, it was judged unhealthy, had a
// recovery requested, was replaced (a newer instance), or is not Running now. The step is
// healthy only when every node heartbeat at least settle_seconds after the failure (so its
// health checks ran after it) and none is at fault. Unknown names are not endure's nodes
// and are left out. A verdict at or before handled_until (when the job was last made whole
// again after a fault) was that fault's, already repaired: with a warm spare the re-run can
// start within the slack that lets a verdict just before the recorded start count. A node
// named in `lacking` (the job did not hold it again after the last resume) is at fault.
StepJudgement judge_step(const std::vector<StepNode>& nodes, double step_start, double failed_at,
                         double settle_seconds, double handled_until = 0,
                         const std::vector<std::string>& lacking = {});

const char* decision_name(StepDecision d);

}  // namespace endure::controller
