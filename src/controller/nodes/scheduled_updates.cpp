// SoftwareUpdateManager::start_scheduled: each group's ScheduledUpdateConfig, run by
// endured's own clock. A schedule counts from when endured first saw it (Since: a new
// expression starts again); it comes due at its next time after its last run, or after
// Since before the first; a rate counts its periods from Since. The run is the group's
// UpdateClusterSoftware with the schedule's DeploymentConfig, so it drains a node and
// waits for its jobs (an srun --auto-resume=1 step included) before it touches it.
#include <chrono>

#include "api/wire.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/nodes/software_update_manager.h"

namespace endure::controller {
namespace {

using Clock = std::chrono::system_clock;

Clock::time_point time_at(double epoch_seconds) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(epoch_seconds)));
}

double seconds_at(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The schedule's DeploymentConfig as UpdateClusterSoftware takes it. Alarms are the
// cloud's rollback trigger; endure has none to watch, so they are not passed on.
json deployment_of(const spec::ScheduledUpdateSpec& schedule) {
  if (!schedule.deployment_config) return nullptr;
  json dc = schedule.deployment_config->to_json();
  dc.erase("AutoRollbackConfiguration");
  if (dc.contains("RollingUpdatePolicy"))
    dc["RollingUpdatePolicy"].erase("RollbackMaximumBatchSize");
  return dc;
}

}  // namespace

bool SoftwareUpdateManager::start_scheduled(const store::ClusterRow& cluster,
                                            const spec::ClusterSpec& spec) {
  const double now = ids::now_seconds();
  json state = json::object();
  std::string due_group;
  std::string due_text;
  for (const auto& g : spec.groups) {
    if (!g.scheduled_update) continue;
    const auto& schedule = g.scheduled_update->schedule;
    json entry = cluster.scheduled_updates.value(g.name, json::object());
    if (entry.value("Expression", "") != schedule.text()) {
      entry = {{"Expression", schedule.text()}, {"Since", now}, {"Last", nullptr}};
    }
    state[g.name] = entry;
    const double since = entry.value("Since", now);
    const double base = entry["Last"].is_number() ? entry["Last"].get<double>() : since;
    auto next = schedule.next_after(time_at(base), time_at(since));
    if (due_group.empty() && next && time_at(now) >= *next) {
      due_group = g.name;
      due_text = schedule.text() + " came due at " + ids::iso_time(seconds_at(*next));
    }
  }
  const bool ready =
      cluster.status == ClusterStatus::kInService && cluster.software_update.is_null();
  if (ready && !due_group.empty()) {
    const auto* group = spec.find_group(due_group);
    json request = {{"ClusterName", cluster.name}, {"InstanceGroups", {due_group}}};
    if (json dc = deployment_of(*group->scheduled_update); !dc.is_null()) {
      request["DeploymentConfig"] = dc;
    }
    auto started = start(request);
    state[due_group]["Last"] = now;
    const std::string type = started ? "ScheduledUpdateStarted" : "ScheduledUpdateFailed";
    const std::string text = due_group + ": ScheduledUpdateConfig " + due_text +
                             (started ? "; its rolling update started"
                                      : "; the update could not start: " + started.error().message);
    auto ev =
        store_.append_event({0, cluster.id, 0, "InstanceGroup", due_group, "", "", type, text});
    (void)log::ok(ev ? Status{} : Status(ev.error()), cluster.name + ": " + type);
    log::info("{}: {}: {}", cluster.name, type, text);
  }
  if (state != cluster.scheduled_updates) {
    log::ok(store_.mutate_cluster(cluster.id,
                                  [&](store::ClusterRow& c) -> Status {
                                    c.scheduled_updates = state;
                                    return {};
                                  }),
            cluster.name + ": record its scheduled updates");
  }
  return ready && !due_group.empty();
}

}  // namespace endure::controller
