#include "controller/nodes/software_update_manager.h"

#include <algorithm>

#include "api/wire.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/lookup.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/recovery_policy.h"
#include "controller/core/software_update_plan.h"
#include "controller/core/transition.h"
#include "controller/nodes/node_bootstrap.h"

namespace endure::controller {
namespace {

// Saves the plan; inside the caller's transaction when there is one.
Status save_plan(store::Store& store, const std::string& cluster_id,
                 const SoftwareUpdatePlan& plan) {
  return store.mutate_cluster(cluster_id, [&](store::ClusterRow& c) -> Status {
    c.software_update = plan.to_json();
    return {};
  });
}

// The plan without `node` in flight (a batch ends with its last node).
SoftwareUpdatePlan without(SoftwareUpdatePlan plan, const std::string& node, double now) {
  std::erase_if(plan.in_flight, [&](const auto& f) { return f.node == node; });
  if (plan.in_flight.empty()) plan.batch_done_at = now;
  return plan;
}

}  // namespace

Result<json> SoftwareUpdateManager::start(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto model = load_model(store_, *cluster);
  if (!model) return model.error();
  auto plan = plan_software_update(request, model->layout);
  if (!plan) return plan.error();
  Status s = store_.transaction([&]() -> Status {
    auto fresh = store_.cluster_by_id(cluster->id);
    if (!fresh || fresh->status != ClusterStatus::kInService) {
      return make_error(api::kConflictException,
                        "ClusterName: cluster " + cluster->name + " is " +
                            (fresh ? name(fresh->status) : "gone") +
                            "; its software can be updated when InService");
    }
    return transition(
        store_, *fresh,
        [&](store::ClusterRow& c) {
          c.status = ClusterStatus::kSystemUpdating;
          c.software_update = plan->to_json();
          c.updated_at = ids::now_seconds();
        },
        "ClusterSoftwareUpdating",
        fmt::format("UpdateClusterSoftware {}: {} nodes, {} at a time, {} s between batches",
                    plan->id, plan->remaining.size(), plan->batch_size, plan->wait_seconds));
  });
  if (!s) return s.error();
  return json{{"ClusterArn", cluster->arn}};
}

bool SoftwareUpdateManager::reconcile(const store::ClusterRow& cluster,
                                      const spec::ClusterLayout& layout, const SlurmView& slurm) {
  auto fresh = store_.cluster_by_id(cluster.id);
  if (!fresh || fresh->status != ClusterStatus::kSystemUpdating) return false;
  auto stored = SoftwareUpdatePlan::from_json(fresh->software_update);
  if (!stored) {
    log::error("{}: {}", cluster.name, stored.error().message);
    return false;
  }
  SoftwareUpdatePlan plan = *stored;
  auto rows = store_.instances(cluster.id, true);
  auto live = [&](const std::string& node) { return live_in_slot(rows, node); };
  PendingObservation seen;
  seen.now = ids::now_seconds();
  if (const auto* c = live(layout.controller_node))
    seen.controller_running = c->status == NodeStatus::kRunning;
  const PendingLimits limits = pending_limits(config_);
  bool acted = false;
  for (const auto& flight : std::vector(plan.in_flight)) {
    const auto* row = live(flight.node);
    const auto* slot = layout.find(flight.node);
    seen.role = slot ? slot->role : spec::NodeRole::kLogin;
    auto it = slurm.nodes.find(flight.node);
    seen.slurm_node = it == slurm.nodes.end() ? std::nullopt : std::optional(it->second);
    seen.controller_up =
        seen.role == spec::NodeRole::kController && slurm.client && slurm.client->controller_up();
    UpdateDecision d = decide_update(row, flight.instance_id, seen, limits);
    switch (d.step) {
      case UpdateStep::kWait:
        break;
      case UpdateStep::kDone: {
        SoftwareUpdatePlan next = without(plan, flight.node, seen.now);
        if (log::ok(save_plan(store_, cluster.id, next), cluster.name + ": software update")) {
          plan = next;
        }
        break;
      }
      case UpdateStep::kDrain:
        if (slurm.client) {
          log::ok(slurm.client->drain(
                      flight.node, std::string(kDrainReasonPrefix) + " software update " + plan.id),
                  flight.node + ": drain for the software update");
        }
        break;
      case UpdateStep::kWaitForJobs:
        if (row->message != d.text) {
          (void)apply(store_, *row, note(d.text));
        }
        break;
      case UpdateStep::kStart: {
        if (!apply(store_, *row, start_update(plan.id, seen.now))) break;
        health_.forget(row->instance_id);
        [[fallthrough]];
      }
      case UpdateStep::kReimage: {
        auto pid = provider_.reimage(cluster.id, row->instance_id);
        if (!pid) {
          log::error("{}: reimage: {}", flight.node, pid.error().message);
          break;  // tried again next pass, until the update's clock runs out
        }
        (void)apply(store_, *row, record_pid(*pid));
        acted = true;
        break;
      }
      case UpdateStep::kFinish: {
        if (d.resume_in_slurm && slurm.client) {
          if (auto s = slurm.client->resume(flight.node); !s) {
            log::warn("{}: {}", flight.node, s.error().message);
            break;
          }
        }
        SoftwareUpdatePlan next = without(plan, flight.node, seen.now);
        // The node and the plan in one transaction: a restart never updates a node twice.
        Status s = store_.transaction([&]() -> Status {
          Status t = apply(
              store_, *row,
              finish_update(fmt::format("software update {}: in service {:.1f} s after it started",
                                        plan.id, seen.now - row->recovery_since),
                            seen.now));
          return t ? save_plan(store_, cluster.id, next) : t;
        });
        if (s) plan = next;
        acted = true;
        break;
      }
      case UpdateStep::kFail: {
        SoftwareUpdatePlan next = without(plan, flight.node, seen.now);
        Status s = store_.transaction([&]() -> Status {
          Status t = apply(store_, *row, fail_update(d.text, seen.now));
          return t ? save_plan(store_, cluster.id, next) : t;
        });
        if (s) plan = next;
        acted = true;
        break;
      }
    }
  }
  auto batch = next_batch(plan, layout, seen.now);
  if (!batch.empty()) {
    SoftwareUpdatePlan next = plan;
    for (const auto& node : batch) {
      std::erase(next.remaining, node);
      // A slot with no live instance now gets a new one, which runs new software anyway.
      if (const auto* row = live(node)) next.in_flight.push_back({node, row->instance_id});
    }
    next.largest_batch = std::max(next.largest_batch, static_cast<int>(next.in_flight.size()));
    if (log::ok(save_plan(store_, cluster.id, next), cluster.name + ": software update")) {
      plan = next;
      acted = true;
    }
  }
  if (plan.in_flight.empty() && plan.remaining.empty()) {
    (void)transition(
        store_, *fresh,
        [](store::ClusterRow& c) {
          c.status = ClusterStatus::kInService;
          c.software_update = nullptr;
        },
        "ClusterSoftwareUpdated",
        fmt::format("UpdateClusterSoftware {}: every node updated, at most {} at a time", plan.id,
                    plan.largest_batch));
  }
  return acted;
}

}  // namespace endure::controller
