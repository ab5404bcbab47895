#include "controller/slurm/slurm_conf_push.h"

#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "api/node_contract.h"
#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/slurm/slurm_in_node.h"
#include "slurm/conf_edits.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_conf.h"

namespace endure::controller {

using Instance = store::InstanceRow;
using Cluster = store::ClusterRow;

std::string slurm_files_hash(const spec::ClusterLayout& layout) {
  return slurm::content_hash(slurm::render_slurm_conf(layout) + slurm::render_hosts(layout));
}

namespace {

using namespace std::chrono_literals;

// Whether a node holds exactly these files already: a node launched on the current layout
// was given them before its daemons started.
bool holds(provider::NodeProvider& provider, const std::string& cluster_id,
           const std::string& instance_id, const std::string& path, const std::string& content) {
  auto out = provider.exec(cluster_id, instance_id, {"cat", path}, 10s);
  return out.exit_code == 0 && out.out == content;
}

void note(store::Store& store, const store::ClusterRow& cluster, const Instance& controller,
          const std::string& type, const std::string& text) {
  auto ev = store.append_event({0, cluster.id, 0, "Cluster", controller.group,
                                controller.instance_id, controller.node_name, type, text});
  (void)log::ok(ev ? Status{} : Status(ev.error()), cluster.name + ": " + type);
  log::info("{}: {}: {}", cluster.name, type, text);
}

// Whether Managed already said so of this edit (the edited file's hash) in this run of
// endured: each pass finds the edit again, the event log needs it once.
bool said_before(const std::string& cluster_id, const std::string& edit_hash) {
  static std::mutex mutex;
  static std::map<std::string, std::string> said;  // cluster id -> edited file's hash
  std::lock_guard lock(mutex);
  auto& last = said[cluster_id];
  if (last == edit_hash) return true;
  last = edit_hash;
  return false;
}

// What to write over a slurm.conf a person edited on the controller, as the strategy says;
// nullopt when nothing is to be written (Managed). Each outcome is an event.
std::optional<std::string> meet_edit(store::Store& store, const store::ClusterRow& cluster,
                                     const Instance& controller, const std::string& conf,
                                     const std::string& edited, api::SlurmConfigStrategy strategy) {
  const std::string where = "slurm.conf on " + controller.node_name + " was edited by hand";
  switch (strategy) {
    case api::SlurmConfigStrategy::kManaged:
      if (!said_before(cluster.id, slurm::content_hash(edited))) {
        note(store, cluster, controller, "SlurmConfigEdited",
             where + "; SlurmConfigStrategy Managed leaves it and applies none of endured's "
                     "changes (nodes added or moved stay out of Slurm) until the edit is undone "
                     "or UpdateCluster sets Orchestrator.Slurm.SlurmConfigStrategy to Merge or "
                     "Overwrite");
      }
      return std::nullopt;
    case api::SlurmConfigStrategy::kOverwrite:
      note(store, cluster, controller, "SlurmConfigOverwritten",
           where + "; SlurmConfigStrategy Overwrite replaced it with endured's");
      return conf;
    case api::SlurmConfigStrategy::kMerge: {
      auto kept = slurm::added_partition_lines(conf, edited);
      std::string names;
      for (const auto& line : kept) {
        for (const auto& name : slurm::partition_names(line)) {
          names += (names.empty() ? "" : ", ") + name;
        }
      }
      note(store, cluster, controller, "SlurmConfigMerged",
           where + "; SlurmConfigStrategy Merge kept " +
               (kept.empty() ? std::string("no partition of its own (none was added)")
                             : "its partitions " + names) +
               " beside endured's");
      return slurm::with_lines(conf, kept);
    }
  }
  return conf;
}

}  // namespace

void push_slurm_conf(store::Store& store, provider::NodeProvider& provider,
                     const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                     api::SlurmConfigStrategy strategy) {
  std::string conf = slurm::render_slurm_conf(layout);
  std::string hosts = slurm::render_hosts(layout);
  std::string hash = slurm::content_hash(conf + hosts);
  if (hash == cluster.applied_conf_hash) return;
  // Never pushed: every node has the files of its launch, which its daemons started on.
  const bool first = cluster.applied_conf_hash.empty();
  auto rows = store.instances(cluster.id, true);
  const Instance* controller = nullptr;
  for (const auto& r : rows) {
    if (r.node_name == layout.controller_node && r.status == NodeStatus::kRunning) controller = &r;
  }
  // The controller's copy is the one a person edits (and the one slurmctld reads).
  if (!first && controller && provider.running(cluster.id, controller->instance_id)) {
    auto now =
        provider.exec(cluster.id, controller->instance_id, {"cat", node::kSlurmConfPath}, 10s);
    if (now.exit_code == 0 && !slurm::seal_intact(now.out)) {
      auto written = meet_edit(store, cluster, *controller, conf, now.out, strategy);
      if (!written) return;
      conf = *written;
    } else if (now.exit_code == 0 && strategy == api::SlurmConfigStrategy::kMerge) {
      // Partitions kept by an earlier merge stay through every later write.
      conf = slurm::with_lines(conf, slurm::added_partition_lines(conf, now.out));
    }
  }
  // Every node at once: on hosts each write is an SSH round trip, and a swapped-in spare
  // waits for them.
  std::vector<std::future<std::pair<bool, bool>>> writes;  // (written, held them already)
  for (const auto& r : rows) {
    writes.push_back(std::async(std::launch::async, [&] {
      if (!provider.running(cluster.id, r.instance_id)) return std::make_pair(true, true);
      if (first && holds(provider, cluster.id, r.instance_id, node::kSlurmConfPath, conf) &&
          holds(provider, cluster.id, r.instance_id, node::kHostsPath, hosts)) {
        return std::make_pair(true, true);
      }
      const std::string what = r.node_name + ": write the cluster's files";
      bool ok =
          log::ok(provider.write_file(cluster.id, r.instance_id, node::kSlurmConfPath, conf), what);
      ok = ok &&
           log::ok(provider.write_file(cluster.id, r.instance_id, node::kHostsPath, hosts), what);
      return std::make_pair(ok, false);
    }));
  }
  bool written = true, held = true;
  for (auto& w : writes) {
    auto [ok, had] = w.get();
    written &= ok;
    held &= had;
  }
  // Not applied until every node has the files (tried again next pass); the controller's
  // lifecycle starts slurmctld on this conf.
  if (!written || !controller) return;
  slurm::SlurmClient client = slurm_in_node(provider, cluster.id, controller->instance_id);
  // A slurmctld that is down (a restart that failed) is started on the current conf.
  auto known =
      client.controller_up()
          ? client.nodes()
          : Result<std::vector<slurm::NodeState>>(make_error("SlurmError", "slurmctld is down"));
  std::set<std::string> known_names, wanted_names;
  std::map<std::string, std::pair<std::string, std::string>> known_places;
  if (known) {
    for (const auto& n : *known) {
      known_names.insert(n.name);
      known_places[n.name] = {n.address, n.hostname};
    }
  }
  for (const auto& n : layout.nodes) {
    if (n.role == spec::NodeRole::kWorker) wanted_names.insert(n.node_name);
  }
  bool restart = !known || known_names != wanted_names;
  // Workers that moved to another host keep their names: slurmctld is told where they run.
  std::vector<const spec::NodeSlot*> moved;
  for (const auto& n : layout.nodes) {
    if (n.role != spec::NodeRole::kWorker || !n.on_host) continue;
    if (known_places[n.node_name] != std::make_pair(n.address, n.hostname)) moved.push_back(&n);
  }
  // A new cluster whose daemons all started on these files: a reconfigure would only make
  // every slurmd reload them while the first jobs arrive, and a step launched into a slurmd
  // that is reloading fails (srun: "failed reading io init message").
  const bool started_on_them = first && held && !restart && moved.empty();
  Status s = started_on_them ? Status{}
             : restart       ? client.restart_controller()
                             : client.reconfigure();
  for (const auto* n : moved) {
    if (!s || restart) break;
    s = client.move_node(n->node_name, n->address, n->hostname);
  }
  if (!s) {
    log::warn("{}: {}", cluster.name, s.error().message);
    return;
  }
  const char* how = started_on_them ? "slurmctld started on"
                    : restart       ? "slurmctld restarted on"
                                    : "reconfigured to";
  (void)transition(
      store, cluster, [&](Cluster& c) { c.applied_conf_hash = hash; }, "SlurmConfigApplied",
      std::string(how) + " a slurm.conf of " + std::to_string(wanted_names.size()) + " nodes");
}

}  // namespace endure::controller
