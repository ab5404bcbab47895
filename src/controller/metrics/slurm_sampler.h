// Slurm's own view of each cluster (nodes by Slurm state, jobs by state, CPUs allocated
// and idle), sampled on a thread of its own at most every period, so a scrape never makes
// slurmctld do work: /metrics shows the latest sample. Each sample is one `sinfo --json`
// and one `squeue --json` run in the cluster's controller node, through slurm::SlurmClient.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "provider/node_provider.h"
#include "slurm/slurm_client.h"
#include "store/store.h"

namespace endure::metrics {

struct SlurmSample {
  bool ok = false;  // slurmctld answered both questions
  double time = 0;  // when it was taken
  // By the prometheus-slurm-exporter's state names: alloc, comp, down, drain, err, fail,
  // idle, maint, mix, resv (slurm_nodes_<state>).
  std::map<std::string, double> nodes;
  // By the exporter's queue names: pending, running, completing, ... (slurm_queue_<state>).
  std::map<std::string, double> jobs;
  double cpus_alloc = 0, cpus_idle = 0, cpus_other = 0, cpus_total = 0;
};

// The exporter's node state names, and its queue state names, in the order they are shown.
const std::vector<std::string>& slurm_node_states();
const std::vector<std::string>& slurm_queue_states();

// What Slurm said, counted as the exporter counts it (pure: unit-tested alone). A drained
// node counts as drain whatever its base state; CPUs of a down or drained node are
// "other", as sinfo's %C reports them.
SlurmSample summarize(const std::vector<slurm::NodeState>& nodes,
                      const std::vector<slurm::JobState>& jobs, double now);

class SlurmSampler {
 public:
  // A client into the cluster's controller node, nullopt when it is not running.
  using ClientFor = std::function<std::optional<slurm::SlurmClient>(const store::ClusterRow&)>;

  SlurmSampler(store::Store& store, ClientFor client_for, double period_seconds = 15);
  ~SlurmSampler();

  // The client endured uses everywhere: Slurm's commands run inside the cluster's
  // controller node (the running instance of provisioning's controller_group).
  static ClientFor in_controller_node(store::Store& store, provider::NodeProvider& provider);

  void start();
  void stop();
  // Samples every live cluster now (the thread's work; tests call it directly).
  void sample_all();
  // The latest sample of each cluster, by cluster id.
  std::map<std::string, SlurmSample> samples() const;

 private:
  void run();

  store::Store& store_;
  ClientFor client_for_;
  double period_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, SlurmSample> samples_;
  std::map<std::string, double> tried_;  // when each cluster was last asked
  std::thread thread_;
};

}  // namespace endure::metrics
