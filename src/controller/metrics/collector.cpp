#include "controller/metrics/collector.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace endure::metrics {
namespace {

constexpr int kEventPage = 1000;

using api::ClusterStatus;
using api::NodeStatus;

// Every status but Deleted: a deleted cluster is not shown.
const std::vector<ClusterStatus>& cluster_statuses() {
  static const std::vector<ClusterStatus> statuses = {
      ClusterStatus::kCreating,       ClusterStatus::kInService, ClusterStatus::kUpdating,
      ClusterStatus::kSystemUpdating, ClusterStatus::kDeleting,  ClusterStatus::kFailed};
  return statuses;
}

bool serving(ClusterStatus status) {
  return status == ClusterStatus::kInService || status == ClusterStatus::kUpdating ||
         status == ClusterStatus::kSystemUpdating;
}

// The groups a cluster's spec declares, then any other group a row names.
std::vector<std::string> groups_of(const store::ClusterRow& c,
                                   const std::vector<store::InstanceRow>& rows) {
  std::vector<std::string> groups;
  if (c.spec.is_object() && c.spec.contains("InstanceGroups") &&
      c.spec["InstanceGroups"].is_array()) {
    for (const auto& g : c.spec["InstanceGroups"]) {
      if (g.is_object() && g.contains("InstanceGroupName") && g["InstanceGroupName"].is_string()) {
        groups.push_back(g["InstanceGroupName"].get<std::string>());
      }
    }
  }
  for (const auto& r : rows) {
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
  }
  return groups;
}

// Counters by a label, every value of `always` shown (as 0 when absent).
void counters(TextWriter& out, std::string_view name, std::string_view label,
              const std::string& cluster, const std::map<std::string, double>& values,
              const std::vector<std::string>& always = {}) {
  for (const auto& key : always) {
    if (!values.count(key)) out.sample(name, {{"cluster", cluster}, {label, key}}, 0);
  }
  for (const auto& [key, n] : values) out.sample(name, {{"cluster", cluster}, {label, key}}, n);
}

}  // namespace

void Collector::add_family_writer(FamilyWriter writer) {
  std::lock_guard lock(mu_);
  writers_.push_back(std::move(writer));
}

std::string Collector::render() {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (!cache_.empty() &&
      std::chrono::duration<double>(now - rendered_at_).count() < p_.cache_seconds) {
    return cache_;
  }
  cache_ = render_now();
  rendered_at_ = now;
  return cache_;
}

void Collector::fold_events(const std::string& cluster_id) {
  EventTally& tally = tallies_[cluster_id];
  while (true) {
    auto page = p_.store.events(cluster_id, tally.cursor(), kEventPage);
    for (const auto& ev : page) tally.fold(ev);
    if (static_cast<int>(page.size()) < kEventPage) return;
  }
}

std::string Collector::render_now() {
  std::vector<ClusterView> clusters;
  std::set<std::string> ids;
  std::set<std::string> live_instances;
  for (auto& c : p_.store.clusters()) {
    fold_events(c.id);
    ids.insert(c.id);
    ClusterView v{std::move(c), {}, nullptr};
    v.instances = p_.store.instances(v.row.id, true);
    v.tally = &tallies_[v.row.id];
    for (const auto& r : v.instances) live_instances.insert(r.instance_id);
    clusters.push_back(std::move(v));
  }
  // A deleted cluster's counters go with it.
  for (auto it = tallies_.begin(); it != tallies_.end();) {
    it = ids.count(it->first) ? std::next(it) : tallies_.erase(it);
  }
  p_.node_gauges.retain(live_instances);

  TextWriter out;
  write_state(out, clusters);
  write_events(out, clusters);
  write_nodes(out, clusters);
  p_.api.write(out);
  write_slurm(out, clusters);
  for (const auto& writer : writers_) writer(out);
  return out.take();
}

void Collector::write_state(TextWriter& out, const std::vector<ClusterView>& clusters) {
  out.family("endure_cluster_up", "gauge",
             "1 when the cluster is in service (InService, Updating, SystemUpdating), else 0.");
  for (const auto& c : clusters) {
    out.sample("endure_cluster_up", {{"cluster", c.row.name}}, serving(c.row.status) ? 1 : 0);
  }
  out.family("endure_cluster_status", "gauge", "1 for the cluster's current status, else 0.");
  for (const auto& c : clusters) {
    for (const auto& s : cluster_statuses()) {
      out.sample("endure_cluster_status", {{"cluster", c.row.name}, {"status", api::name(s)}},
                 c.row.status == s ? 1 : 0);
    }
  }
  out.family("endure_nodes", "gauge", "Nodes (live instances) by instance group and status.");
  for (const auto& c : clusters) {
    for (const auto& group : groups_of(c.row, c.instances)) {
      std::map<std::string, double> by_status;
      for (const auto& s : p_.node_statuses) by_status[s] = 0;
      for (const auto& r : c.instances) {
        if (r.group == group) by_status[api::name(r.status)] += 1;
      }
      for (const auto& [status, n] : by_status) {
        out.sample("endure_nodes", {{"cluster", c.row.name}, {"group", group}, {"status", status}},
                   n);
      }
    }
  }
  out.family("endure_warm_spares_ready", "gauge",
             "Warm spares booted, checked and waiting to be swapped in, by instance group.");
  for (const auto& c : clusters) {
    for (const auto& group : groups_of(c.row, c.instances)) {
      double ready = 0;
      for (const auto& r : c.instances)
        ready += r.group == group && r.status == NodeStatus::kWarmSpare;
      out.sample("endure_warm_spares_ready", {{"cluster", c.row.name}, {"group", group}}, ready);
    }
  }
}

void Collector::write_events(TextWriter& out, const std::vector<ClusterView>& clusters) {
  out.family("endure_health_verdicts_total", "counter",
             "Unhealthy verdicts on nodes, by fault kind (recovery_policy.h's table).");
  for (const auto& c : clusters) {
    counters(out, "endure_health_verdicts_total", "kind", c.row.name, c.tally->verdicts);
  }
  out.family("endure_recoveries_total", "counter", "Node recoveries started, by action.");
  for (const auto& c : clusters) {
    counters(out, "endure_recoveries_total", "action", c.row.name, c.tally->recoveries,
             {"Reboot", "Replace"});
  }
  out.family("endure_recovery_drained_seconds", "histogram",
             "Time from a node's unhealthy verdict (or recovery request) to it drained in Slurm.");
  for (const auto& c : clusters) {
    for (const auto& [action, h] : c.tally->to_drained) {
      out.histogram("endure_recovery_drained_seconds",
                    {{"cluster", c.row.name}, {"action", action}}, h);
    }
  }
  out.family("endure_recovery_in_service_seconds", "histogram",
             "Time from a node's unhealthy verdict (or recovery request) to the node (or its "
             "replacement) back in service, by the action that brought it back.");
  for (const auto& c : clusters) {
    for (const auto& [action, h] : c.tally->to_in_service) {
      out.histogram("endure_recovery_in_service_seconds",
                    {{"cluster", c.row.name}, {"action", action}}, h);
    }
  }
  out.family("endure_auto_resumes_total", "counter",
             "Auto-resume decisions and outcomes: granted, refused (resume bound reached), "
             "declined (the step failed on healthy nodes), "
             "ready (job whole again), failed.");
  for (const auto& c : clusters) {
    counters(out, "endure_auto_resumes_total", "outcome", c.row.name, c.tally->auto_resumes,
             {"granted", "refused", "declined", "ready", "failed"});
  }
  out.family("endure_events_total", "counter", "Events written to the cluster's log, by type.");
  for (const auto& c : clusters) {
    counters(out, "endure_events_total", "type", c.row.name, c.tally->events);
  }
}

void Collector::write_nodes(TextWriter& out, const std::vector<ClusterView>& clusters) {
  out.family("endure_node_heartbeat_age_seconds", "gauge",
             "Seconds since the node's agent last sent a heartbeat (none: not heard since "
             "endured started).");
  for (const auto& c : clusters) {
    for (const auto& r : c.instances) {
      double age = p_.heartbeat_age ? p_.heartbeat_age(r.instance_id) : -1;
      if (age < 0) continue;
      out.sample("endure_node_heartbeat_age_seconds",
                 {{"cluster", c.row.name}, {"node", r.node_name}, {"instance_id", r.instance_id}},
                 age);
    }
  }
  auto gauges = p_.node_gauges.snapshot();
  for (std::size_t i = 0; i < api::gauge::kNodeGauges.size(); ++i) {
    const auto& g = api::gauge::kNodeGauges[i];
    out.family(g.metric, "gauge", g.help);
    for (const auto& c : clusters) {
      for (const auto& r : c.instances) {
        auto it = gauges.find(r.instance_id);
        if (it == gauges.end() || std::isnan(it->second[i])) continue;
        out.sample(g.metric,
                   {{"cluster", c.row.name}, {"node", r.node_name}, {"instance_id", r.instance_id}},
                   it->second[i]);
      }
    }
  }
}

void Collector::write_slurm(TextWriter& out, const std::vector<ClusterView>& clusters) {
  if (!p_.slurm) return;
  auto samples = p_.slurm->samples();
  auto sample_of = [&](const ClusterView& c) -> const SlurmSample* {
    auto it = samples.find(c.row.id);
    return it == samples.end() ? nullptr : &it->second;
  };
  out.family("endure_slurm_up", "gauge",
             "1 when the cluster's slurmctld answered endured's last sample, else 0.");
  for (const auto& c : clusters) {
    const SlurmSample* s = sample_of(c);
    out.sample("endure_slurm_up", {{"cluster", c.row.name}}, s && s->ok ? 1 : 0);
  }
  out.family("endure_slurm_sample_timestamp_seconds", "gauge",
             "When endured last asked the cluster's Slurm (Unix time).");
  for (const auto& c : clusters) {
    if (const SlurmSample* s = sample_of(c)) {
      out.sample("endure_slurm_sample_timestamp_seconds", {{"cluster", c.row.name}}, s->time);
    }
  }
  // The prometheus-slurm-exporter's names, one family per state, plus a cluster label.
  auto per_state = [&](const std::string& prefix, const std::string& what,
                       const std::vector<std::string>& states,
                       std::map<std::string, double> SlurmSample::*field) {
    for (const auto& state : states) {
      std::string name = prefix + state;
      out.family(name, "gauge", what + " in Slurm state " + state + ".");
      for (const auto& c : clusters) {
        const SlurmSample* s = sample_of(c);
        if (!s || !s->ok) continue;
        auto it = (s->*field).find(state);
        out.sample(name, {{"cluster", c.row.name}}, it == (s->*field).end() ? 0 : it->second);
      }
    }
  };
  per_state("slurm_nodes_", "Nodes", slurm_node_states(), &SlurmSample::nodes);
  per_state("slurm_queue_", "Jobs", slurm_queue_states(), &SlurmSample::jobs);
  const std::pair<const char*, double SlurmSample::*> cpus[] = {
      {"slurm_cpus_alloc", &SlurmSample::cpus_alloc},
      {"slurm_cpus_idle", &SlurmSample::cpus_idle},
      {"slurm_cpus_other", &SlurmSample::cpus_other},
      {"slurm_cpus_total", &SlurmSample::cpus_total}};
  for (const auto& [name, field] : cpus) {
    out.family(name, "gauge", "CPUs (allocated, idle, other: down or drained; total).");
    for (const auto& c : clusters) {
      const SlurmSample* s = sample_of(c);
      if (s && s->ok) out.sample(name, {{"cluster", c.row.name}}, s->*field);
    }
  }
}

}  // namespace endure::metrics
