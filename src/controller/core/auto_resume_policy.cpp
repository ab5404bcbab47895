#include "controller/core/auto_resume_policy.h"

#include <algorithm>

#include "controller/core/node_state.h"

namespace endure::controller {

StepJudgement judge_step(const std::vector<StepNode>& nodes, double step_start, double failed_at,
                         double settle_seconds, double handled_until,
                         const std::vector<std::string>& lacking) {
  StepJudgement j;
  // A verdict a moment before the step's recorded start still explains it: the start is
  // taken by the supervisor, not by Slurm.
  const double slack = 1.0;
  for (const auto& n : nodes) {
    if (!n.known) continue;
    std::string why;
    if (n.last_fault_time > handled_until && n.last_fault_time >= step_start - slack) {
      why = n.last_fault.empty() ? "judged unhealthy during the step" : n.last_fault;
    } else if (n.launch_time > step_start) {
      why = "replaced during the step";
    } else if (n.recovery) {
      why = std::string(api::name(*n.recovery)) + " under way";
    } else if (n.status != api::NodeStatus::kRunning) {
      why = std::string("node is ") + (n.status ? api::name(*n.status) : "gone");
    }
    if (!why.empty()) {
      j.faulty.push_back(n.name);
      if (j.reason.empty()) j.reason = n.name + ": " + why;
    }
  }
  // Nodes the job lost with the fault but did not get back (judged a moment after it, as
  // one fault): at fault whatever they report now, so the job waits for them too.
  for (const auto& n : nodes) {
    if (!n.known || std::find(lacking.begin(), lacking.end(), n.name) == lacking.end() ||
        std::find(j.faulty.begin(), j.faulty.end(), n.name) != j.faulty.end())
      continue;
    j.faulty.push_back(n.name);
    if (j.reason.empty()) j.reason = n.name + ": not held by the job again after the last resume";
  }
  if (!j.faulty.empty()) {
    j.decision = StepDecision::kFault;
    return j;
  }
  for (const auto& n : nodes) {
    if (!n.known) continue;
    if (n.last_heartbeat < failed_at + settle_seconds) {
      j.decision = StepDecision::kPending;
      j.reason = "waiting for " + n.name + " to report its health after the failure";
      return j;
    }
  }
  j.decision = StepDecision::kHealthy;
  j.reason = "every node of the step is healthy: the application failed";
  return j;
}

const char* decision_name(StepDecision d) {
  switch (d) {
    case StepDecision::kFault:
      return "Fault";
    case StepDecision::kHealthy:
      return "Healthy";
    case StepDecision::kPending:
      return "Pending";
  }
  return "Pending";
}

}  // namespace endure::controller
