// Auto-resume, endured's side: srun's supervisor (src/autoresume/) asks whether a node
// fault explains a failed step; when one does, the job is made whole again once the faulty
// nodes are back in service, and the supervisor re-runs the step in the same job.
//
// Two ways back, both keeping the job id:
// - Expand: a node that was not the batch host failed. Jobs run with --no-kill (the
//   cluster's cli_filter makes it the default), so Slurm shrank the job to the surviving
//   nodes and only the step failed; the job is grown back onto the replacement
//   (permit_job_expansion) and the supervisor, alive on the batch host, runs the step again.
// - Requeue: the batch host itself failed, and the batch script (and the supervisor) died
//   with it. The job is requeued at once and made eligible without Slurm's two-minute
//   delay; the batch script runs again, and its supervisor starts from the job's count.
// Every record is in the store, so a controller restart resumes the same work.
#pragma once

#include <map>
#include <string>

#include "common/json.h"
#include "common/result.h"
#include "controller/core/auto_resume_policy.h"
#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/slurm/slurm_in_node.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

class AutoResumeManager {
 public:
  AutoResumeManager(store::Store& store, const Config& config, HealthMonitor& health);

  // AutoResumeStepFailed: {JobId, Nodes[], StepStartTime, FailedAt, Resumes, Succeeded?} ->
  // {Decision, Reason, FaultyNodes, Resume, ResumeCount, MaxResumes}. Resume is true when
  // a re-run is granted (then wait for AutoResumeStatus to say Ready). Succeeded: srun
  // exited 0; only a fault already known counts, nothing is waited for.
  Result<json> step_failed(const store::ClusterRow& cluster, const json& request);
  // AutoResumeStatus: {JobId} -> {State, ResumeCount, Reason, Message, MaxResumes}; State
  // None when the job never failed.
  Result<json> status(const store::ClusterRow& cluster, const json& request);

  // Called as a node is taken out of Slurm for a fault, with the jobs as they were before:
  // batch jobs whose batch host it was are requeued (or cancelled once their bound is
  // spent: nothing is left to run them). A job Slurm already requeued itself (its only
  // node went down) counts against the bound all the same.
  void node_lost(const store::ClusterRow& cluster, const std::string& node,
                 const std::string& reason, const SlurmView& slurm,
                 const std::vector<slurm::JobState>& jobs_before);

  // Each pass: grows or starts the jobs whose nodes are back; gives up on the overdue.
  void reconcile(const store::ClusterRow& cluster, const SlurmView& slurm);

 private:
  StepNode step_node(const std::vector<store::InstanceRow>& instances,
                     const std::vector<store::InstanceRow>& all_rows, const std::string& name);
  // Stores the job's record and its event in one transaction, and logs them.
  Status record(const store::ClusterRow& cluster, const store::AutoResumeRow& row,
                const std::string& type, const std::string& text);
  void finish(const store::ClusterRow& cluster, store::AutoResumeRow row, const std::string& state,
              const std::string& message);
  // "; worker-1: waiting for an Available host in pool rack-a" for each of the job's faulty
  // nodes whose replacement has no host to go to; "" when none.
  std::string still_waiting(const store::ClusterRow& cluster, const store::AutoResumeRow& row);

  // Whether a requeued job may be started now: its lost nodes have answered Slurm for
  // kRequeueSettleSeconds (see the .cpp).
  bool requeue_settled(const store::ClusterRow& cluster, const store::AutoResumeRow& row,
                       const SlurmView& slurm, double now);

  store::Store& store_;
  const Config& config_;
  HealthMonitor& health_;
  // Requeued jobs (cluster id, job id) whose lost nodes were first seen answering at this
  // time. In memory: after a restart the wait only starts again.
  std::map<std::pair<std::string, long long>, double> nodes_back_since_;
};

// AutoResumeStepFailed's request as step_failed() reads it, before it looks at the store.
struct StepFailure {
  long long job_id = 0;
  std::vector<std::string> nodes;  // Nodes, or NodeList expanded
  double step_start = 0;
  double failed_at = 0;
  int resumes = 0;  // the supervisor's count so far
  bool succeeded = false;
  std::string exit_status;  // as sent (JSON), "?" when absent: for the event's text
  std::vector<std::string> lacking;  // LackingNodes: nodes the job did not hold again
};

// A ValidationException naming the first field that breaks its rule.
Result<StepFailure> read_step_failed(const json& request);

// The reply of AutoResumeStatus for a record (or for none).
json auto_resume_status_json(const std::optional<store::AutoResumeRow>& row, int max_resumes);

}  // namespace endure::controller
