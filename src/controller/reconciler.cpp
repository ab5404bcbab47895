#include "controller/reconciler.h"

#include <sys/random.h>

#include <map>
#include <set>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/node_bootstrap.h"
#include "controller/node_decisions.h"
#include "controller/recovery_policy.h"
#include "controller/transition.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_conf.h"
#include "spec/cluster_spec.h"
#include "spec/provisioning.h"

namespace endure::controller {
namespace {

using namespace std::chrono_literals;

bool is_live(const store::InstanceRow& r) { return r.terminated_at == 0; }

// When the slot's latest instance ended (0 when none did).
double last_terminated(const std::vector<store::InstanceRow>& rows, const std::string& node_name) {
  double latest = 0;
  for (const auto& r : rows) {
    if (r.node_name == node_name) latest = std::max(latest, r.terminated_at);
  }
  return latest;
}

}  // namespace

Reconciler::Reconciler(store::Store& store, provider::NodeProvider& provider, const Config& config,
                       HealthMonitor& health, RecoveryManager& recovery,
                       DeepCheckManager& deep_checks, SoftwareUpdateManager& software_updates,
                       AutoResumeManager& auto_resume)
    : store_(store),
      provider_(provider),
      config_(config),
      health_(health),
      recovery_(recovery),
      deep_checks_(deep_checks),
      software_updates_(software_updates),
      auto_resume_(auto_resume) {}

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
  if (cluster.status == "Deleting") return delete_cluster(cluster);
  if (cluster.status == "Failed") return;
  auto parsed = spec::load_cluster_model(cluster.spec, cluster.provisioning, cluster.index,
                                         cluster.removed_slots);
  if (!parsed) {
    fail_cluster(cluster, "the stored spec no longer parses: " + parsed.error().message);
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
  if (auto s = ensure_munge_key(cluster.id); !s) {
    log::error("{}: {}", cluster.name, s.error().message);
    return;
  }
  remove_extra_instances(cluster, layout);
  if (!fill_slots(cluster, layout)) return;
  launch_pending(cluster, *parsed);
  push_slurm_conf(cluster, layout);

  // One look at Slurm per pass, shared by what follows.
  SlurmView view;
  std::optional<slurm::SlurmClient> client;
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.node_name != layout.controller_node || !provider_.running(cluster.id, r.instance_id)) {
      continue;
    }
    client.emplace([this, id = r.instance_id, cid = cluster.id](
                       const std::vector<std::string>& argv, std::chrono::milliseconds t) {
      return provider_.exec(cid, id, argv, t);
    });
    view.client = &*client;
    if (r.status == "Running" || r.recovery_stage == "Rebooting") {
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
  if (software_updates_.reconcile(cluster, layout, view)) wake();
  auto_resume_.reconcile(cluster, view);
  update_cluster_status(cluster, layout);
}

Status Reconciler::ensure_munge_key(const std::string& cluster_id) {
  auto path = config_.secrets_dir() / cluster_id / "munge.key";
  if (std::filesystem::exists(path)) return {};
  if (auto s = fs::make_dirs(path.parent_path(), 0700); !s) return s;
  std::string key(1024, '\0');
  if (getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) {
    return make_error("IOError", "getrandom for the munge key failed");
  }
  return fs::atomic_write_file(path, key, 0600);
}

void Reconciler::retire_instance(const store::InstanceRow& row, const std::string& status,
                                 const std::string& message, bool keep_files) {
  Status s = keep_files ? provider_.terminate(row.cluster_id, row.instance_id)
                        : provider_.destroy(row.cluster_id, row.instance_id);
  if (!s) {
    log::error("{}: {}", row.instance_id, s.error().message);
    return;  // try again next pass; the row stays live so nothing is orphaned
  }
  (void)transition(store_, row,
                   {{status == "Failure" ? "InstanceFailed" : "InstanceTerminated", message}},
                   [&](store::InstanceRow& r) {
                     r.status = status;
                     r.message = message;
                     r.pid = 0;
                     r.terminated_at = ids::now_seconds();
                   });
}

void Reconciler::remove_extra_instances(const store::ClusterRow& cluster,
                                        const spec::ClusterLayout& layout) {
  auto rows = store_.instances(cluster.id, false);
  for (const auto& r : rows) {
    if (!is_live(r) || layout.find(r.node_name)) continue;
    if (r.status != "ShuttingDown" &&
        !transition(store_, r, {{"InstanceShuttingDown", "slot left the spec (scale down)"}},
                    [](store::InstanceRow& x) {
                      x.status = "ShuttingDown";
                      x.message = "";
                    })) {
      continue;
    }
    retire_instance(r, "Terminated", "terminated by scale down", false);
  }
  // Orphans: files of instances that the store does not hold as live. A running one is
  // killed; the files of a retired instance go unless it failed (its log is kept).
  std::map<std::string, const store::InstanceRow*> by_id;
  for (const auto& r : rows) by_id[r.instance_id] = &r;
  for (const auto& id : provider_.instance_ids(cluster.id)) {
    auto it = by_id.find(id);
    if (it != by_id.end() && is_live(*it->second)) continue;
    bool failed = it != by_id.end() && it->second->status == "Failure";
    if (provider_.running(cluster.id, id))
      log::warn("{}: terminating orphan instance {}", cluster.name, id);
    log::ok(failed ? provider_.terminate(cluster.id, id) : provider_.destroy(cluster.id, id),
            cluster.name + ": remove orphan instance " + id);
  }
}

bool Reconciler::fill_slots(const store::ClusterRow& cluster, const spec::ClusterLayout& layout) {
  auto rows = store_.instances(cluster.id, false);
  for (const auto& slot : layout.nodes) {
    if (live_in_slot(rows, slot.node_name)) continue;
    // One retry per slot and operation: the second failure fails the cluster.
    const store::InstanceRow* last_failure = nullptr;
    int failures = 0;
    for (const auto& r : rows) {
      if (r.node_name == slot.node_name && r.status == "Failure" &&
          r.launch_time >= cluster.updated_at) {
        ++failures;
        last_failure = &r;
      }
    }
    if (failures >= 2) {
      std::string message = slot.node_name + ": " + last_failure->message;
      if (!last_failure->lifecycle_tail.empty()) {
        message += "; last lines: " + last_failure->lifecycle_tail;
      }
      fail_cluster(cluster, message);
      return false;
    }
    store::InstanceRow row;
    row.instance_id = ids::new_instance_id();
    row.cluster_id = cluster.id;
    row.group = slot.group;
    row.slot = slot.slot;
    row.node_name = slot.node_name;
    row.status = "Pending";
    row.launch_time = ids::now_seconds();
    row.agent_token = ids::new_token();
    row.lifecycle_status = "NotStarted";
    std::string description =
        failures ? "retrying on a new instance after a failure" : "new instance";
    for (const auto& r : rows) {
      if (r.node_name == slot.node_name && r.message.rfind("replaced: ", 0) == 0 &&
          r.terminated_at >= last_terminated(rows, slot.node_name)) {
        row.replaces = r.instance_id;
        row.recovery_since = r.recovery_since;  // when the fault was found
        description = "replacing " + r.instance_id + " (" + r.message.substr(10) + ")";
      }
    }
    (void)insert_node(store_, row, description);
    crash_point("fill.after_insert");
  }
  return true;
}

void Reconciler::launch_pending(const store::ClusterRow& cluster, const spec::ClusterModel& model) {
  const auto& layout = model.layout;
  auto rows = store_.instances(cluster.id, true);
  // What every new node gets, made only when a pass launches one.
  std::string conf, hosts;
  std::optional<Result<std::string>> key;
  auto prepare_files = [&] {
    if (key) return;
    conf = slurm::render_slurm_conf(layout);
    hosts = slurm::render_hosts(layout);
    key = fs::read_file(config_.secrets_dir() / cluster.id / "munge.key");
  };
  for (const auto& r : rows) {
    if (r.status != "Pending") continue;
    if (provider_.running(cluster.id, r.instance_id)) {
      if (r.pid == 0) {  // launched by a controller that died before recording it
        int pid = provider_.pid(cluster.id, r.instance_id);
        (void)transition(store_, r,
                         {{"InstanceAdopted", "found running after a controller restart"}},
                         [&](store::InstanceRow& x) { x.pid = pid; });
      }
      continue;
    }
    if (!r.recovery.empty()) continue;  // a reboot under way: recovery watches it
    if (r.pid != 0) {
      std::string why = provider_.boot_diagnostics(cluster.id, r.instance_id);
      retire_instance(r, "Failure",
                      "instance stopped during creation" + (why.empty() ? "" : ": " + why), true);
      continue;
    }
    const auto* slot = layout.find(r.node_name);
    const auto* group = model.spec.find_group(r.group);
    prepare_files();
    if (!slot || !group || !*key) continue;
    auto source = provider_.resolve_lifecycle_source("LifeCycleConfig", group->lifecycle.source_uri,
                                                     group->lifecycle.on_create);
    if (!source) {
      retire_instance(r, "Failure", source.error().message, true);
      continue;
    }
    auto auto_resume_token = store_.auto_resume_token(cluster.id);
    if (!auto_resume_token) {
      log::error("{}: {}", cluster.name, auto_resume_token.error().message);
      continue;
    }
    NodeFiles files{conf, hosts, **key, *auto_resume_token};
    provider::LaunchRequest request =
        launch_request(config_, cluster, model, *slot, *group, r, rows, files);
    request.lifecycle_source = *source;
    // A fresh boot: nothing of an earlier, unrecorded attempt may survive.
    if (!log::ok(provider_.destroy(cluster.id, r.instance_id),
                 r.node_name + ": clear an earlier attempt")) {
      continue;
    }
    crash_point("launch.before");
    auto pid = provider_.launch(request);
    crash_point("launch.before_record");
    if (!r.replaces.empty()) crash_point("recovery.after_launch");
    if (!pid) {
      retire_instance(r, "Failure", "launch failed: " + pid.error().message, true);
      continue;
    }
    (void)transition(store_, r, {{"InstanceLaunched", "host pid " + std::to_string(*pid)}},
                     [&](store::InstanceRow& x) { x.pid = *pid; });
  }
}

void Reconciler::push_slurm_conf(const store::ClusterRow& cluster,
                                 const spec::ClusterLayout& layout) {
  std::string conf = slurm::render_slurm_conf(layout);
  std::string hosts = slurm::render_hosts(layout);
  std::string hash = slurm::content_hash(conf + hosts);
  if (hash == cluster.applied_conf_hash) return;
  auto rows = store_.instances(cluster.id, true);
  const store::InstanceRow* controller = nullptr;
  bool written = true;
  for (const auto& r : rows) {
    if (!provider_.running(cluster.id, r.instance_id)) continue;
    const std::string what = r.node_name + ": write the cluster's files";
    written &=
        log::ok(provider_.write_file(cluster.id, r.instance_id, node::kSlurmConfPath, conf), what);
    written &=
        log::ok(provider_.write_file(cluster.id, r.instance_id, node::kHostsPath, hosts), what);
    if (r.node_name == layout.controller_node && r.status == "Running") controller = &r;
  }
  // Not applied until every node has the files (tried again next pass); the controller's
  // lifecycle starts slurmctld on this conf.
  if (!written || !controller) return;
  slurm::SlurmClient client([&](const std::vector<std::string>& argv, std::chrono::milliseconds t) {
    return provider_.exec(cluster.id, controller->instance_id, argv, t);
  });
  // A slurmctld that is down (a restart that failed) is started on the current conf.
  auto known =
      client.controller_up()
          ? client.nodes()
          : Result<std::vector<slurm::NodeState>>(make_error("SlurmError", "slurmctld is down"));
  std::set<std::string> known_names, wanted_names;
  if (known) {
    for (const auto& n : *known) known_names.insert(n.name);
  }
  for (const auto& n : layout.nodes) {
    if (n.role == spec::NodeRole::kWorker) wanted_names.insert(n.node_name);
  }
  bool restart = !known || known_names != wanted_names;
  Status s = restart ? client.restart_controller() : client.reconfigure();
  if (!s) {
    log::warn("{}: {}", cluster.name, s.error().message);
    return;
  }
  (void)transition(
      store_, cluster, [&](store::ClusterRow& c) { c.applied_conf_hash = hash; },
      "SlurmConfigApplied",
      std::string(restart ? "slurmctld restarted on" : "reconfigured to") + " a slurm.conf of " +
          std::to_string(wanted_names.size()) + " nodes");
}

void Reconciler::advance_pending(const store::ClusterRow& cluster,
                                 const spec::ClusterLayout& layout, const SlurmView& slurm) {
  PendingObservation seen;
  seen.now = ids::now_seconds();
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.node_name == layout.controller_node && r.status == "Running") {
      seen.controller_running = true;
    }
  }
  const PendingLimits limits = pending_limits(config_);
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status != "Pending") continue;
    const auto* slot = layout.find(r.node_name);
    if (!slot) continue;
    seen.role = slot->role;
    auto it = slurm.nodes.find(r.node_name);
    seen.slurm_node = it == slurm.nodes.end() ? std::nullopt : std::optional(it->second);
    // Asked only where it decides something: it runs scontrol in the controller node.
    seen.controller_up = slot->role == spec::NodeRole::kController &&
                         r.lifecycle_status == "Succeeded" && slurm.client &&
                         slurm.client->controller_up();
    PendingDecision d = decide_pending(r, seen, limits);
    switch (d.step) {
      case PendingStep::kNothing:
        break;
      case PendingStep::kWait:
        (void)transition(store_, r, {}, [&](store::InstanceRow& x) { x.message = d.text; });
        break;
      case PendingStep::kRetire:
        retire_instance(r, "Failure", d.text, true);
        break;
      case PendingStep::kRebootFailed:
        (void)transition(store_, r, {{"RebootFailed", d.text}}, [&](store::InstanceRow& x) {
          x.recovery = "Replace";
          x.recovery_reason = "reboot-failed: " + d.text;
          x.recovery_stage = "Requested";
        });
        break;
      case PendingStep::kRun: {
        if (d.resume_in_slurm && slurm.client) {
          if (auto s = slurm.client->resume(r.node_name); !s) {
            log::warn("{}: {}", r.node_name, s.error().message);
            break;
          }
        }
        crash_point("running.before_record");
        if (d.event == "NodeReturnedToService") crash_point("recovery.before_return");
        Status s = transition(store_, r, {{d.event, d.text}}, [&](store::InstanceRow& x) {
          x.status = "Running";
          x.message = "";
          x.health = "Healthy";
          x.recovery = "";
          x.recovery_stage = "";
          x.recovery_since = seen.now;  // watched from here on
        });
        // Jobs waiting to resume on this node are grown back in the next pass.
        if (s && d.event == "NodeReturnedToService") wake();
        break;
      }
    }
  }
}

void Reconciler::update_cluster_status(const store::ClusterRow& cluster,
                                       const spec::ClusterLayout& layout) {
  if (cluster.status != "Creating" && cluster.status != "Updating") return;
  auto rows = store_.instances(cluster.id, true);
  if (rows.size() != layout.nodes.size()) return;
  for (const auto& r : rows) {
    if (r.status != "Running") return;
  }
  auto fresh = store_.cluster_by_id(cluster.id);
  if (!fresh || fresh->applied_conf_hash != slurm::content_hash(slurm::render_slurm_conf(layout) +
                                                                slurm::render_hosts(layout))) {
    return;  // Slurm must run the current node set first
  }
  crash_point("inservice.before_record");
  double took = ids::now_seconds() - cluster.updated_at;
  (void)transition(
      store_, cluster, [](store::ClusterRow& c) { c.status = "InService"; }, "ClusterInService",
      fmt::format("{} instances Running; {} took {:.1f} s", rows.size(),
                  cluster.status == "Creating" ? "CreateCluster" : "UpdateCluster", took));
}

void Reconciler::fail_cluster(const store::ClusterRow& cluster, const std::string& message) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status == "Pending") retire_instance(r, "Failure", "cluster failed", true);
  }
  (void)transition(
      store_, cluster,
      [&](store::ClusterRow& c) {
        c.status = "Failed";
        c.failure_message = message;
      },
      "ClusterFailed", message);
}

void Reconciler::delete_cluster(const store::ClusterRow& cluster) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status != "ShuttingDown" &&
        !transition(store_, r, {}, [](store::InstanceRow& x) { x.status = "ShuttingDown"; })) {
      continue;
    }
    retire_instance(r, "Terminated", "cluster deleted", false);
  }
  for (const auto& id : provider_.instance_ids(cluster.id)) {
    log::ok(provider_.destroy(cluster.id, id), cluster.name + ": destroy " + id);
  }
  if (auto s = provider_.remove_cluster(cluster.id); !s) {
    log::warn("{}: {}", cluster.name, s.error().message);
    return;
  }
  if (!log::ok(fs::remove_tree(config_.secrets_dir() / cluster.id),
               cluster.name + ": remove its secrets")) {
    return;  // tried again next pass: a deleted cluster leaves no key behind
  }
  (void)transition(
      store_, cluster, [](store::ClusterRow& c) { c.status = "Deleted"; }, "ClusterDeleted",
      "every instance terminated and its files removed");
}

}  // namespace endure::controller
