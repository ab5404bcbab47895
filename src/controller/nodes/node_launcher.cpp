#include "controller/nodes/node_launcher.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "api/node_contract.h"
#include "api/wire.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/route.h"
#include "controller/core/lookup.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/nodes/logical_ids.h"
#include "controller/nodes/node_bootstrap.h"
#include "controller/nodes/retirement.h"
#include "controller/nodes/shared_fs_grant.h"
#include "slurm/slurm_conf.h"

namespace endure::controller {
namespace {

bool is_live(const store::InstanceRow& r) { return r.terminated_at == 0; }

// When the slot's latest instance ended (0 when none did).
double last_terminated(const std::vector<store::InstanceRow>& rows, const std::string& node_name) {
  double latest = 0;
  for (const auto& r : rows) {
    if (r.node_name == node_name) latest = std::max(latest, r.terminated_at);
  }
  return latest;
}

// endured's TLS endpoint as the host at host_address reaches it.
Result<std::string> agent_url_for(const Config& config, const std::string& host_address) {
  if (config.agent_tls_port <= 0) {
    return make_error(api::kValidationException,
                      "nodes on registered hosts reach endured over TLS: set AgentTlsPort in "
                      "config.json");
  }
  auto address = net::source_address_toward(host_address);
  if (!address) return address.error();
  bool v6 = address->find(':') != std::string::npos;
  return fmt::format("https://{}:{}", v6 ? "[" + *address + "]" : *address, config.agent_tls_port);
}

}  // namespace

Status NodeLauncher::ensure_munge_key(const std::string& cluster_id) {
  auto path = config_.secrets_dir() / cluster_id / "munge.key";
  if (std::filesystem::exists(path)) return {};
  if (auto s = fs::make_dirs(path.parent_path(), 0700); !s) return s;
  std::string key(1024, '\0');
  if (getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) {
    return make_error("IOError", "getrandom for the munge key failed");
  }
  return fs::atomic_write_file(path, key, 0600);
}

void NodeLauncher::retire_instance(const store::InstanceRow& row, NodeStatus status,
                                   const std::string& message, bool keep_files) {
  Retirement how{retire(status, message, ids::now_seconds())};
  how.keep_files = keep_files;
  (void)controller::retire_instance(store_, provider_, health_, row, how);
}

void NodeLauncher::remove_extra_instances(const store::ClusterRow& cluster,
                                          const spec::ClusterLayout& layout) {
  auto rows = store_.instances(cluster.id, false);
  for (const auto& r : rows) {
    if (!is_live(r) || layout.find(r.node_name)) continue;
    if (r.status != NodeStatus::kShuttingDown &&
        !apply(store_, r, begin_shutdown(/*scale_down=*/true))) {
      continue;
    }
    retire_instance(r, NodeStatus::kTerminated, "terminated by scale down", false);
  }
  // Orphans: files of instances that the store does not hold as live. A running one is
  // killed; the files of a retired instance go unless it failed (its log is kept).
  std::map<std::string, const store::InstanceRow*> by_id;
  for (const auto& r : rows) by_id[r.instance_id] = &r;
  for (const auto& id : provider_.instance_ids(cluster.id)) {
    auto it = by_id.find(id);
    if (it != by_id.end() && is_live(*it->second)) continue;
    bool failed = it != by_id.end() && it->second->status == NodeStatus::kFailure;
    if (provider_.running(cluster.id, id))
      log::warn("{}: terminating orphan instance {}", cluster.name, id);
    log::ok(failed ? provider_.terminate(cluster.id, id) : provider_.destroy(cluster.id, id),
            cluster.name + ": remove orphan instance " + id);
  }
}

bool NodeLauncher::failed_by_its_host(const std::string& cluster_id,
                                      const store::InstanceRow& row) {
  auto host = hosts_.host_of(cluster_id, row.instance_id);
  return host && host->state == provider::HostState::kQuarantined;
}

std::optional<std::string> NodeLauncher::fill_slots(const store::ClusterRow& cluster,
                                                    const spec::ClusterLayout& layout,
                                                    bool continuous) {
  auto rows = store_.instances(cluster.id, false);
  // Every slot has its NodeLogicalId before an instance is launched into it.
  auto logical_ids = sync_logical_ids(store_, cluster, layout);
  if (!logical_ids) log::warn("{}: node logical ids: {}", cluster.name, logical_ids.error().message);
  for (const auto& slot : layout.nodes) {
    if (live_in_slot(rows, slot.node_name)) continue;
    // One retry per slot and operation: the second failure fails the cluster.
    const store::InstanceRow* last_failure = nullptr;
    int failures = 0;
    for (const auto& r : rows) {
      if (r.node_name == slot.node_name && r.status == NodeStatus::kFailure &&
          r.launch_time >= cluster.updated_at && !failed_by_its_host(cluster.id, r)) {
        ++failures;
        last_failure = &r;
      }
    }
    std::string retry;
    if (continuous) {
      // Failures since the slot last had an instance that did not fail, however long ago.
      failures = 0;
      last_failure = nullptr;
      for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
        if (r->node_name != slot.node_name || failed_by_its_host(cluster.id, *r)) continue;
        if (r->status != NodeStatus::kFailure) break;
        if (!last_failure) last_failure = &*r;
        ++failures;
      }
      if (failures > 0) {
        const double wait =
            std::min(kLongestRetryWait, kFirstRetryWait * std::pow(2.0, failures - 1));
        const double since = std::max(last_failure->launch_time, last_failure->terminated_at);
        if (ids::now_seconds() - since < wait) continue;
        retry = fmt::format("try {} after {} failure{} (NodeProvisioningMode Continuous; {:g} s "
                            "after the last): {}",
                            failures + 1, failures, failures == 1 ? "" : "s", wait,
                            last_failure->message);
      }
    } else if (failures >= 2) {
      std::string message = slot.node_name + ": " + last_failure->message;
      if (!last_failure->lifecycle_tail.empty()) {
        message += "; last lines: " + last_failure->lifecycle_tail;
      }
      return message;
    }
    store::InstanceRow row;
    row.instance_id = ids::new_instance_id();
    row.cluster_id = cluster.id;
    row.group = slot.group;
    row.slot = slot.slot;
    row.node_name = slot.node_name;
    row.status = NodeStatus::kPending;
    row.launch_time = ids::now_seconds();
    row.agent_token = ids::new_token();
    row.lifecycle_status = LifecycleStatus::kNotStarted;
    if (logical_ids) row.logical_id = logical_ids->value(slot.node_name, "");
    std::string description = !retry.empty() ? retry
                              : failures     ? "retrying on a new instance after a failure"
                                             : "new instance";
    bool swapped = false;
    for (const auto& r : rows) {
      if (r.node_name == slot.node_name && r.message.rfind("replaced: ", 0) == 0 &&
          r.terminated_at >= last_terminated(rows, slot.node_name)) {
        swapped = spares_.swap_in(cluster, layout, slot, r);
        if (swapped) break;
        row.replaces = r.instance_id;
        row.recovery_since = r.recovery_since;  // when the fault was found
        description = "replacing " + r.instance_id + " (" + r.message.substr(10) + ")";
      }
    }
    if (swapped) continue;
    (void)insert_node(store_, row, description);
    crash_point("fill.after_insert");
  }
  return std::nullopt;
}

void NodeLauncher::claim_hosts(const store::ClusterRow& cluster, const spec::ClusterModel& model) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    const auto* group = model.spec.find_group(r.group);
    if (r.status != NodeStatus::kPending || r.pid != 0 || !group || group->host_pool.empty())
      continue;
    if (hosts_.host_of(cluster.id, r.instance_id)) continue;
    auto claimed = hosts_.claim(group->host_pool, cluster.id, r.instance_id, {});
    if (!claimed) {
      log::error("{}: {}", r.node_name, claimed.error().message);
      continue;
    }
    if (*claimed) {
      log::info("{}: {} on host {}", cluster.name, r.node_name, (*claimed)->host.ssh.name);
      continue;
    }
    std::string waiting = kWaitingForHost + group->host_pool;
    if (r.message == waiting) continue;
    (void)apply(store_, r, wait_for_host(group->host_pool, waiting));
  }
}

void NodeLauncher::launch_pending(const store::ClusterRow& cluster,
                                  const spec::ClusterModel& loaded, bool spares) {
  claim_hosts(cluster, loaded);
  // Placed again: the hosts claimed just now are part of this pass's files.
  spec::ClusterModel model = loaded;
  spec::place_on_hosts(model.layout, host_placements(store_, cluster.id));
  const auto& layout = model.layout;
  auto rows = store_.instances(cluster.id, true);
  // What every new node gets, made only when a pass launches one.
  std::string conf, hosts;
  std::optional<Result<std::string>> key;
  SharedFsAccess shared_fs;
  auto prepare_files = [&] {
    if (key) return;
    conf = slurm::render_slurm_conf(layout);
    hosts = slurm::render_hosts(layout);
    key = fs::read_file(config_.secrets_dir() / cluster.id / "munge.key");
    if (*key && model.spec.shared_fs) {
      auto access = shared_fs_access(config_, cluster.id);
      if (access) shared_fs = *access;
      else key = access.error();  // granted before any launch: a missing key is an error
    }
  };
  for (const auto& r : rows) {
    if (r.status != NodeStatus::kPending) continue;
    if (provider_.running(cluster.id, r.instance_id)) {
      if (r.pid == 0) {  // launched by a controller that died before recording it
        int pid = provider_.pid(cluster.id, r.instance_id);
        (void)apply(store_, r, adopt(pid));
      }
      continue;
    }
    if (r.recovery.has_value()) continue;  // a reboot under way: recovery watches it
    if (r.pid != 0) {
      std::string why = provider_.boot_diagnostics(cluster.id, r.instance_id);
      retire_instance(r, NodeStatus::kFailure,
                      "instance stopped during creation" + (why.empty() ? "" : ": " + why), true);
      continue;
    }
    const auto* slot = layout.find(r.node_name);
    if (slot && slot->spare != spares) continue;
    const auto* group = model.spec.find_group(r.group);
    prepare_files();
    if (!slot || !group || !*key) continue;
    std::optional<provider::HostRecord> host;
    NodeEndpoint endpoint;
    if (!group->host_pool.empty()) {
      host = hosts_.host_of(cluster.id, r.instance_id);
      if (!host) continue;  // waits for a host of its pool
      auto url = agent_url_for(config_, host->host.ssh.address);
      if (!url) {
        retire_instance(r, NodeStatus::kFailure, url.error().message, true);
        continue;
      }
      endpoint = {*url, node::kEndureCaPath};
    }
    auto source = provider_.resolve_lifecycle_source("LifeCycleConfig", group->lifecycle.source_uri,
                                                     group->lifecycle.on_create);
    if (!source) {
      retire_instance(r, NodeStatus::kFailure, source.error().message, true);
      continue;
    }
    auto auto_resume_token = store_.auto_resume_token(cluster.id);
    if (!auto_resume_token) {
      log::error("{}: {}", cluster.name, auto_resume_token.error().message);
      continue;
    }
    // The cluster's own, kept with it: a replaced node's store takes the same credential.
    Result<std::string> memory_store_token("");
    if (spec::memory_tier_on(model.spec.tiered_storage)) {
      memory_store_token = store_.memory_store_token(cluster.id);
    }
    if (!memory_store_token) {
      log::error("{}: {}", cluster.name, memory_store_token.error().message);
      continue;
    }
    NodeFiles files{conf,
                    hosts,
                    **key,
                    *auto_resume_token,
                    *memory_store_token,
                    shared_fs.private_key,
                    shared_fs.known_hosts};
    provider::LaunchRequest request =
        launch_request(config_, cluster, model, *slot, *group, r, rows, files, endpoint);
    request.lifecycle_source = *source;
    if (host) request.host_name = host->host.ssh.name;
    // A fresh boot: nothing of an earlier, unrecorded attempt may survive (a host is
    // cleaned by its launch, and keeps its claim meanwhile).
    if (!host && !log::ok(provider_.destroy(cluster.id, r.instance_id),
                          r.node_name + ": clear an earlier attempt")) {
      continue;
    }
    crash_point("launch.before");
    auto pid = provider_.launch(request);
    crash_point("launch.before_record");
    if (!r.replaces.empty()) crash_point("recovery.after_launch");
    if (!pid) {
      retire_instance(r, NodeStatus::kFailure, "launch failed: " + pid.error().message, true);
      continue;
    }
    (void)apply(store_, r, record_launch(*pid));
  }
}

}  // namespace endure::controller
