#include "controller/nodes/warm_spares.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/core/transition.h"
#include "controller/nodes/retirement.h"
#include "controller/slurm/slurm_in_node.h"

namespace endure::controller {

using namespace std::chrono_literals;

bool WarmSpares::swap_in(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                         const spec::NodeSlot& slot, const store::InstanceRow& replaced) {
  std::vector<store::InstanceRow> ready;
  std::string controller;
  for (auto& r : store_.instances(cluster.id, true)) {
    if (r.node_name == layout.controller_node && r.status == NodeStatus::kRunning)
      controller = r.instance_id;
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
        apply(store_, spare, controller::swap_in(slot.node_name, slot.slot, replaced, text));
    return recorded.ok();
  }
  return false;
}

void WarmSpares::watch(const store::ClusterRow& cluster) {
  for (const auto& r : store_.instances(cluster.id, true)) {
    if (r.status != NodeStatus::kWarmSpare) continue;
    if (auto verdict =
            health_.assess(r.instance_id, provider_.running(cluster.id, r.instance_id))) {
      lose(r, std::string(api::name(verdict->fault)) + ": " + verdict->detail);
    } else if (double silent = health_.silent_for(r.instance_id, r.recovery_since);
               silent > config_.heartbeat_timeout_seconds) {
      lose(r, fmt::format("no heartbeat for {:.0f} s", silent));
    }
  }
}

void WarmSpares::lose(const store::InstanceRow& spare, const std::string& reason) {
  Retirement how{lose_spare(reason, ids::now_seconds())};
  how.set_aside = reason;
  (void)retire_instance(store_, provider_, health_, spare, how);
}

}  // namespace endure::controller
