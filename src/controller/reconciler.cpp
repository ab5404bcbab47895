#include "controller/reconciler.h"

#include <algorithm>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/lookup.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/recovery_policy.h"
#include "controller/core/transition.h"
#include "controller/nodes/into_service.h"
#include "controller/nodes/memory_store_push.h"
#include "controller/nodes/shared_fs_grant.h"
#include "controller/slurm/slurm_conf_push.h"
#include "controller/slurm/slurm_in_node.h"
#include "controller/slurm/slurmctld_watch.h"
#include "slurm/slurm_client.h"
#include "spec/cluster_spec.h"
#include "spec/provisioning.h"

namespace endure::controller {

Reconciler::Reconciler(store::Store& store, provider::NodeProvider& provider, const Config& config,
                       HealthMonitor& health, RecoveryManager& recovery,
                       DeepCheckManager& deep_checks, SoftwareUpdateManager& software_updates,
                       AutoResumeManager& auto_resume, provider::HostRegistry& hosts)
    : store_(store),
      provider_(provider),
      config_(config),
      recovery_(recovery),
      deep_checks_(deep_checks),
      software_updates_(software_updates),
      auto_resume_(auto_resume),
      launcher_(store, provider, config, health, hosts) {}

Reconciler::~Reconciler() { stop(); }

void Reconciler::start() {
  thread_ = std::thread([this] {
    while (!stopping_) {
      reconcile_all();
      std::unique_lock lock(mu_);
      cv_.wait_for(lock,
                   std::chrono::milliseconds(static_cast<int>(config_.reconcile_seconds * 1000)),
                   [this] { return woken_ || stopping_; });
      woken_ = false;
    }
  });
}

void Reconciler::stop() {
  stopping_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Reconciler::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  cv_.notify_all();
}

void Reconciler::reconcile_all() {
  for (const auto& cluster : store_.clusters()) {
    if (stopping_) return;
    try {
      reconcile_cluster(cluster);
    } catch (const std::exception& e) {
      log::error("reconcile {}: {}", cluster.name, e.what());
    }
  }
  passes_ += 1;
}

void Reconciler::reconcile_cluster(const store::ClusterRow& cluster) {
  if (cluster.status == ClusterStatus::kDeleting) return delete_cluster(cluster);
  if (cluster.status == ClusterStatus::kFailed) return;
  auto parsed = load_model(store_, cluster);
  if (!parsed) {
    fail_cluster(cluster, parsed.error().message);
    return;
  }
  const auto& layout = parsed->layout;
  // Claimed at creation; again here, so that a cluster stored before a host reboot (which
  // clears the host's claims) holds its index before another controller takes it.
  if (auto s = provider_.claim_cluster_index(cluster.id, cluster.index); !s) {
    log::error("{}: {}", cluster.name, s.error().message);
    return;
  }
  if (auto s = provider_.prepare_cluster(cluster.id); !s) {
    log::error("{}: {}", cluster.name, s.error().message);
    return;
  }
  if (auto s = launcher_.ensure_munge_key(cluster.id); !s) {
    log::error("{}: {}", cluster.name, s.error().message);
    return;
  }
  // Granted once, before any node needs it; a file server that refuses a new cluster
  // fails it with the reason rather than leaving it Creating for ever.
  if (const auto& shared = parsed->spec.shared_fs) {
    if (auto s = grant_shared_fs(config_, cluster.id, *shared); !s) {
      if (cluster.status == ClusterStatus::kCreating)
        return fail_cluster(cluster, s.error().message);
      log::error("{}: {}", cluster.name, s.error().message);
      return;
    }
  }
  launcher_.remove_extra_instances(cluster, layout);
  launcher_.spares().watch(cluster);
  if (auto failure = launcher_.fill_slots(cluster, layout, parsed->spec.continuous)) {
    fail_cluster(cluster, *failure);
    return;
  }
  launcher_.launch_pending(cluster, *parsed, /*spares=*/false);
  // Launching may have placed nodes on hosts: what follows sees them where they are now.
  if (auto placed = load_model(store_, cluster); placed) parsed->layout = std::move(placed->layout);

  // One look at Slurm per pass, shared by what follows.
  SlurmView view;
  std::optional<slurm::SlurmClient> client;
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.node_name != layout.controller_node || !provider_.running(cluster.id, r.instance_id)) {
      continue;
    }
    client.emplace(slurm_in_node(provider_, cluster.id, r.instance_id));
    view.client = &*client;
    if (r.status == NodeStatus::kRunning || r.recovery_stage == RecoveryStage::kRebooting) {
      restart_dead_slurmctld(store_, provider_, cluster, r, *client);
      if (auto nodes = client->nodes(); nodes) {
        for (auto& n : *nodes) view.nodes[n.name] = n;
      }
    }
  }
  advance_pending(cluster, layout, view);
  // Before recovery: a failed deep check hands its node to recovery in the same pass.
  deep_checks_.reconcile(cluster, view);
  // A replacement leaves its slot empty: fill it in the next pass, not a period later.
  if (recovery_.reconcile(cluster, parsed->spec, layout, view)) wake();
  if (software_updates_.start_scheduled(cluster, parsed->spec)) wake();
  if (software_updates_.reconcile(cluster, layout, view)) wake();
  auto_resume_.reconcile(cluster, view);
  // A warm spare's refill is background work: bootstrapping its host over SSH takes a
  // second or more, which a job waiting above for a swapped-in node must not wait for.
  launcher_.launch_pending(cluster, *parsed, /*spares=*/true);
  if (auto placed = load_model(store_, cluster); placed) parsed->layout = std::move(placed->layout);
  // Last: a swapped-in spare, which Slurm already knows by its name and address, is in
  // service above without waiting for every node's copy of the files.
  push_slurm_conf(store_, provider_, cluster, layout,
                  spec::slurm_config_strategy(parsed->spec.orchestrator));
  push_memory_store_config(store_, provider_, cluster, parsed->spec);
  update_cluster_status(cluster, *parsed);
}

void Reconciler::advance_pending(const store::ClusterRow& cluster,
                                 const spec::ClusterLayout& layout, SlurmView& slurm) {
  const double now = ids::now_seconds();
  const PendingLimits limits = pending_limits(config_);
  const auto rows = store_.instances(cluster.id, true);
  for (const auto& r : rows) {
    // A rebooting node is the recovery's to bring back (RecoveryManager::watch_reboot).
    if (r.status != NodeStatus::kPending || r.recovery_stage == RecoveryStage::kRebooting) {
      continue;
    }
    const auto* slot = layout.find(r.node_name);
    if (!slot) continue;
    PendingDecision d = decide_pending(r, observe_pending(rows, layout, *slot, r, slurm, now),
                                       limits);
    switch (d.step) {
      case PendingStep::kNothing:
      case PendingStep::kRebootFailed:  // only a rebooting node's
        break;
      case PendingStep::kWait:
        (void)apply(store_, r, note(d.text));
        break;
      case PendingStep::kRetire:
        launcher_.retire_instance(r, NodeStatus::kFailure, d.text, true);
        break;
      case PendingStep::kRun: {
        Status s = enter_service(store_, provider_, r, slot->spare, d, slurm, now);
        // Jobs waiting to resume on this node are grown back in the next pass.
        if (s && d.event == "NodeReturnedToService") wake();
        break;
      }
    }
  }
}

void Reconciler::update_cluster_status(const store::ClusterRow& cluster,
                                       const spec::ClusterModel& model) {
  const spec::ClusterLayout& layout = model.layout;
  if (cluster.status != ClusterStatus::kCreating && cluster.status != ClusterStatus::kUpdating)
    return;
  auto rows = store_.instances(cluster.id, true);
  if (model.spec.continuous) {
    // In service once the controller (and the login group) runs; workers come as they can.
    for (const auto& slot : layout.nodes) {
      if (slot.role == spec::NodeRole::kWorker) continue;
      if (std::none_of(rows.begin(), rows.end(), [&](const auto& r) {
            return r.node_name == slot.node_name && r.status == NodeStatus::kRunning;
          })) {
        return;
      }
    }
  } else {
    if (rows.size() != layout.nodes.size()) return;
    for (const auto& r : rows) {
      if (r.status != NodeStatus::kRunning && r.status != NodeStatus::kWarmSpare) return;
    }
  }
  auto fresh = store_.cluster_by_id(cluster.id);
  if (!fresh || fresh->applied_conf_hash != slurm_files_hash(layout)) {
    return;  // Slurm must run the current node set first
  }
  if (fresh->applied_memory_store != spec::memory_store_setting(model.spec.tiered_storage)) {
    return;  // an UpdateCluster of the memory tier is done once every node holds it
  }
  crash_point("inservice.before_record");
  double took = ids::now_seconds() - cluster.updated_at;
  (void)transition(
      store_, cluster, [](store::ClusterRow& c) { c.status = ClusterStatus::kInService; },
      "ClusterInService",
      fmt::format("{} instances Running; {} took {:.1f} s",
                  model.spec.continuous
                      ? std::count_if(rows.begin(), rows.end(),
                                      [](const auto& r) { return r.status == NodeStatus::kRunning; })
                      : static_cast<long>(rows.size()),
                  cluster.status == ClusterStatus::kCreating ? "CreateCluster" : "UpdateCluster",
                  took));
}

void Reconciler::fail_cluster(const store::ClusterRow& cluster, const std::string& message) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status == NodeStatus::kPending)
      launcher_.retire_instance(r, NodeStatus::kFailure, "cluster failed", true);
  }
  (void)transition(
      store_, cluster,
      [&](store::ClusterRow& c) {
        c.status = ClusterStatus::kFailed;
        c.failure_message = message;
      },
      "ClusterFailed", message);
}

void Reconciler::delete_cluster(const store::ClusterRow& cluster) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status != NodeStatus::kShuttingDown &&
        !apply(store_, r, begin_shutdown(/*scale_down=*/false))) {
      continue;
    }
    launcher_.retire_instance(r, NodeStatus::kTerminated, "cluster deleted", false);
  }
  for (const auto& id : provider_.instance_ids(cluster.id)) {
    log::ok(provider_.destroy(cluster.id, id), cluster.name + ": destroy " + id);
  }
  if (auto s = provider_.remove_cluster(cluster.id); !s) {
    log::warn("{}: {}", cluster.name, s.error().message);
    return;
  }
  // A file server that cannot be reached now keeps a key nobody holds any more: the
  // private half goes with the secrets below.
  if (auto spec = spec::parse_cluster_spec(cluster.spec); spec && spec->shared_fs) {
    log::ok(revoke_shared_fs(config_, cluster.id, *spec->shared_fs),
            cluster.name + ": take its key off the file server");
  }
  if (!log::ok(fs::remove_tree(config_.secrets_dir() / cluster.id),
               cluster.name + ": remove its secrets")) {
    return;  // tried again next pass: a deleted cluster leaves no key behind
  }
  (void)transition(
      store_, cluster, [](store::ClusterRow& c) { c.status = ClusterStatus::kDeleted; },
      "ClusterDeleted", "every instance terminated and its files removed");
}

}  // namespace endure::controller
