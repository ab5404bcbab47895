#include "controller/slurm/slurm_conf_push.h"

#include <future>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "api/node_contract.h"
#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/slurm/slurm_in_node.h"
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

}  // namespace

void push_slurm_conf(store::Store& store, provider::NodeProvider& provider,
                     const store::ClusterRow& cluster, const spec::ClusterLayout& layout) {
  std::string conf = slurm::render_slurm_conf(layout);
  std::string hosts = slurm::render_hosts(layout);
  std::string hash = slurm::content_hash(conf + hosts);
  if (hash == cluster.applied_conf_hash) return;
  // Never pushed: every node has the files of its launch, which its daemons started on.
  const bool first = cluster.applied_conf_hash.empty();
  auto rows = store.instances(cluster.id, true);
  const Instance* controller = nullptr;
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
    if (r.node_name == layout.controller_node && r.status == NodeStatus::kRunning) controller = &r;
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
