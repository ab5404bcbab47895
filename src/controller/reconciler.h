// The reconcile loop: drives every cluster's instances toward its spec, one step at a
// time and idempotently, so a controller killed at any point picks up where it stopped.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/health/deep_check_manager.h"
#include "controller/health/recovery_manager.h"
#include "controller/jobs/auto_resume_manager.h"
#include "controller/nodes/node_launcher.h"
#include "controller/nodes/software_update_manager.h"
#include "provider/node_provider.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

class Reconciler {
 public:
  Reconciler(store::Store& store, provider::NodeProvider& provider, const Config& config,
             HealthMonitor& health, RecoveryManager& recovery, DeepCheckManager& deep_checks,
             SoftwareUpdateManager& software_updates, AutoResumeManager& auto_resume,
             provider::HostRegistry& hosts);
  ~Reconciler();

  void start();
  void stop();
  // Runs a pass soon (after an API call changed something).
  void wake();
  // One pass over every cluster (what the loop runs).
  void reconcile_all();
  // Passes completed since start: lets a caller wait until a change has been looked at.
  long long passes() const { return passes_; }

 private:
  void reconcile_cluster(const store::ClusterRow& cluster);
  void delete_cluster(const store::ClusterRow& cluster);
  void advance_pending(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                       SlurmView& slurm);
  void update_cluster_status(const store::ClusterRow& cluster, const spec::ClusterModel& model);

  void fail_cluster(const store::ClusterRow& cluster, const std::string& message);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  RecoveryManager& recovery_;
  DeepCheckManager& deep_checks_;
  SoftwareUpdateManager& software_updates_;
  AutoResumeManager& auto_resume_;
  NodeLauncher launcher_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<long long> passes_{0};
};

}  // namespace endure::controller
