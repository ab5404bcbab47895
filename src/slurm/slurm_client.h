// Talking to a cluster's Slurm through Slurm's own commands, run inside the controller
// node, reading their JSON output (--json) wherever Slurm offers it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/result.h"

namespace endure::slurm {

// Runs a command inside the controller node.
using Runner = std::function<process::Output(const std::vector<std::string>& argv,
                                             std::chrono::milliseconds timeout)>;

struct NodeState {
  std::string name;
  std::string state;               // idle, allocated, mixed, down, unknown, ...
  std::vector<std::string> flags;  // DRAIN, NOT_RESPONDING, ...
  std::string reason;
  std::string address;   // NodeAddr
  std::string hostname;  // NodeHostname
  int cpus = 0;          // CPUs Slurm schedules on it
  int alloc_cpus = 0;    // of those, allocated to jobs

  // Registered and able to take work (idle, allocated or mixed, and responding).
  bool in_service() const;
  // Registered and responding, whether or not it is drained.
  bool registered() const;
  bool has_flag(const std::string& flag) const;
  bool drained() const { return has_flag("DRAIN"); }
  bool down() const { return state == "down"; }
  bool busy() const { return state == "allocated" || state == "mixed"; }
};

// A job as `squeue --json` reports it.
struct JobState {
  long long id = 0;
  std::string state;       // PENDING, RUNNING, COMPLETING, ...
  std::string batch_host;  // where the batch script runs (empty for salloc/srun jobs)
  std::vector<std::string> nodes;
  std::string partition;
  int user_id = 0;
  bool requeue = false;  // may be requeued (sbatch --requeue, JobRequeue=1)
  int restart_count = 0;
  bool batch = false;
};

class SlurmClient {
 public:
  explicit SlurmClient(Runner runner) : run_(std::move(runner)) {}

  // Every node slurmctld knows, from `sinfo --json`.
  Result<std::vector<NodeState>> nodes() const;

  // slurmctld answers.
  bool controller_up() const;
  // The slurmctld (`scontrol ping`) or the slurmd (`scontrol show slurmd`, run in that
  // node) of the node this client runs in answers within timeout.
  bool controller_answers(std::chrono::milliseconds timeout) const;
  bool slurmd_answers(std::chrono::milliseconds timeout) const;

  // Takes a node out of service at once: DOWN (its jobs fail with NODE_FAIL, so they
  // can be requeued or resumed) and DRAIN (so that a new slurmd registering under its
  // name takes no job until endured resumes it).
  Status down_and_drain(const std::string& node, const std::string& reason) const;
  // Only DRAIN: running jobs finish, no new ones start.
  Status drain(const std::string& node, const std::string& reason) const;
  // Back to service.
  Status resume(const std::string& node) const;
  // Where the node now runs (a registered host that took its name), without restarting
  // slurmctld.
  Status move_node(const std::string& node, const std::string& address,
                   const std::string& hostname) const;

  // A maintenance reservation of nodes (no new job starts on them; running ones go on).
  Status create_maintenance_reservation(const std::string& name,
                                        const std::vector<std::string>& nodes) const;
  Status delete_reservation(const std::string& name) const;

  // Every job slurmctld knows, from `squeue --json`.
  Result<std::vector<JobState>> jobs() const;
  // Grows a running job onto idle nodes, keeping its id (needs permit_job_expansion): an
  // allocation of the nodes for the job's user that depends on it with expand:, then
  // merged into it. Checks the job's node list afterwards, not Slurm's message.
  Status expand_job(const JobState& job, const std::vector<std::string>& nodes) const;
  // Requeues a batch job (it keeps its id) and makes it eligible at once, not after
  // Slurm's two-minute requeue delay.
  Status requeue_job(long long job_id) const;
  // The job's numbered steps (not .batch or .extern) that hold any of these nodes.
  Result<std::vector<std::string>> steps_on(long long job_id,
                                            const std::vector<std::string>& nodes) const;
  Status start_job_now(long long job_id) const;
  Status cancel_job(long long job_id, const std::string& why) const;
  Status cancel_job_step(const std::string& step_id) const;  // "JOB.STEP"

  // `scontrol reconfigure`: every daemon re-reads slurm.conf; running jobs go on.
  Status reconfigure() const;

  // Stops slurmctld (its state is saved), starts it again on the current slurm.conf, and
  // waits until it answers. Slurm 22.05 needs this when nodes are added or removed;
  // running jobs and their steps go on.
  Status restart_controller() const;

  // Whether the slurmctld process of its pid file still runs (a daemon that exited or
  // crashed leaves the file behind).
  bool controller_running() const;
  // Starts slurmctld, which recovers Slurm's saved state, and waits until it answers.
  Status start_controller() const;

 private:
  Runner run_;
};

}  // namespace endure::slurm
