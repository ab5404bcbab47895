#include "controller/warm_spares.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/node_state.h"
#include "controller/slurm_in_node.h"
#include "controller/transition.h"

namespace endure::controller {

using namespace std::chrono_literals;

bool WarmSpares::swap_in(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                         const spec::NodeSlot& slot, const store::InstanceRow& replaced) {
  std::vector<store::InstanceRow> ready;
  std::string controller;
  for (auto& r : store_.instances(cluster.id, true)) {
    if (r.node_name == layout.controller_node && r.status == NodeStatus::kRunning) controller = r.instance_id;
    if (r.status == NodeStatus::kWarmSpare && r.group == slot.group) ready.push_back(std::move(r));
  }
  // The same spare each time it is asked: one a crash left half swapped in is finished.
  std::sort(ready.begin(), ready.end(),
            [](const auto& a, const auto& b) { return a.node_name < b.node_name; });
  for (const auto& spare : ready) {
    Status s = provider_.rename(cluster.id, spare.instance_id, slot.node_name);
    const spec::NodeSlot* machine = layout.find(spare.node_name);
    if (s && machine && machine->on_host && !controller.empty()) {
      s = slurm_in_node(provider_, cluster.id, controller)
              .move_node(slot.node_name, machine->address, machine->hostname);
    }
    if (s) {
      auto out = provider_.exec(cluster.id, spare.instance_id,
                                {std::string(node::kBinDir) + "/endure-agent", "--swap-in",
                                 slot.node_name, "--partition", slot.partition},
                                20s);
      if (out.exit_code != 0) {
        s = make_error("SwapInFailed", out.err.empty() ? out.out : out.err);
      }
    }
    if (!s) {
      lose(spare, "could not take " + slot.node_name + "'s name: " + s.error().message);
      continue;
    }
    crash_point("spare.before_record");
    std::string text = fmt::format("{} took {}'s Slurm name, replacing {} ({})", spare.node_name,
                                   slot.node_name, replaced.instance_id, replaced.recovery_reason);
    Status recorded =
        transition(store_, spare, {{"WarmSpareSwappedIn", text}}, [&](store::InstanceRow& x) {
          x.status = NodeStatus::kPending;
          x.node_name = slot.node_name;
          x.slot = slot.slot;
          x.replaces = replaced.instance_id;
          x.recovery_since = replaced.recovery_since;  // when the fault was found
          x.message = "swapped in: waiting for Slurm to see it as " + slot.node_name;
        });
    return recorded.ok();
  }
  return false;
}

void WarmSpares::watch(const store::ClusterRow& cluster) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status != NodeStatus::kWarmSpare) continue;
    if (auto verdict =
            health_.assess(r.instance_id, provider_.running(cluster.id, r.instance_id))) {
      lose(r, verdict->fault + ": " + verdict->detail);
    } else if (double silent = health_.silent_for(r.instance_id, r.recovery_since);
               silent > config_.heartbeat_timeout_seconds) {
      lose(r, fmt::format("no heartbeat for {:.0f} s", silent));
    }
  }
}

void WarmSpares::lose(const store::InstanceRow& spare, const std::string& reason) {
  log::ok(provider_.set_aside(spare.cluster_id, spare.instance_id, reason),
          spare.node_name + ": set its machine aside");
  if (auto s = provider_.destroy(spare.cluster_id, spare.instance_id); !s) {
    log::error("{}: {}", spare.instance_id, s.error().message);
    return;  // tried again next pass
  }
  if (transition(store_, spare, {{"WarmSpareLost", reason}}, [&](store::InstanceRow& x) {
        x.status = NodeStatus::kTerminated;
        x.message = "spare lost: " + reason;
        x.pid = 0;
        x.terminated_at = ids::now_seconds();
      })) {
    health_.forget(spare.instance_id);
  }
}

}  // namespace endure::controller
