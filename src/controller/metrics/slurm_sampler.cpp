#include "controller/metrics/slurm_sampler.h"

#include <algorithm>
#include <cctype>

#include "common/ids.h"
#include "controller/slurm/slurm_in_node.h"

namespace endure::metrics {
namespace {

using namespace std::chrono_literals;
using api::ClusterStatus;
using api::NodeStatus;

// The exporter's names (its nodes.go matches sinfo's %T by these prefixes).
std::string node_state_name(const slurm::NodeState& n) {
  if (n.down()) return "down";
  if (n.drained()) return "drain";
  if (n.has_flag("MAINTENANCE")) return "maint";
  if (n.has_flag("RESERVED")) return "resv";
  if (n.has_flag("COMPLETING")) return "comp";
  const std::string& s = n.state;
  if (s == "allocated") return "alloc";
  if (s == "mixed") return "mix";
  if (s == "idle") return "idle";
  if (s == "error") return "err";
  if (s == "fail" || s == "failing") return "fail";
  if (s == "completing") return "comp";
  return "";  // unknown, future: the exporter does not count them either
}

std::string queue_state_name(const std::string& job_state) {
  std::string s = job_state;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool live(const store::ClusterRow& c) {
  return c.status != ClusterStatus::kDeleted && c.status != ClusterStatus::kDeleting &&
         c.status != ClusterStatus::kFailed;
}

}  // namespace

const std::vector<std::string>& slurm_node_states() {
  static const std::vector<std::string> states = {"alloc", "comp", "down",  "drain", "err",
                                                  "fail",  "idle", "maint", "mix",   "resv"};
  return states;
}

const std::vector<std::string>& slurm_queue_states() {
  static const std::vector<std::string> states = {
      "pending",     "running", "suspended", "cancelled", "completing", "completed",
      "configuring", "failed",  "timeout",   "preempted", "node_fail"};
  return states;
}

SlurmSample summarize(const std::vector<slurm::NodeState>& nodes,
                      const std::vector<slurm::JobState>& jobs, double now) {
  SlurmSample s;
  s.ok = true;
  s.time = now;
  for (const auto& state : slurm_node_states()) s.nodes[state] = 0;
  for (const auto& state : slurm_queue_states()) s.jobs[state] = 0;
  for (const auto& n : nodes) {
    std::string state = node_state_name(n);
    if (!state.empty()) s.nodes[state] += 1;
    s.cpus_total += n.cpus;
    if (n.down() || n.drained() || !n.registered()) {
      s.cpus_other += n.cpus;
    } else {
      s.cpus_alloc += n.alloc_cpus;
      s.cpus_idle += std::max(0, n.cpus - n.alloc_cpus);
    }
  }
  for (const auto& j : jobs) {
    std::string state = queue_state_name(j.state);
    // The exporter's list only: a state Slurm adds later must not add a metric name.
    if (s.jobs.count(state)) s.jobs[state] += 1;
  }
  return s;
}

SlurmSampler::SlurmSampler(store::Store& store, ClientFor client_for, double period_seconds)
    : store_(store), client_for_(std::move(client_for)), period_(period_seconds) {}

SlurmSampler::~SlurmSampler() { stop(); }

SlurmSampler::ClientFor SlurmSampler::in_controller_node(store::Store& store,
                                                         provider::NodeProvider& provider) {
  return [&store, &provider](const store::ClusterRow& c) -> std::optional<slurm::SlurmClient> {
    std::string group =
        c.provisioning.is_object() ? c.provisioning.value("controller_group", "") : "";
    for (const auto& r : store.instances(c.id, true)) {
      if (r.group != group || r.status != NodeStatus::kRunning ||
          !provider.running(c.id, r.instance_id)) {
        continue;
      }
      return controller::slurm_in_node(provider, c.id, r.instance_id);
    }
    return std::nullopt;
  };
}

void SlurmSampler::sample_all() {
  const double now = ids::now_seconds();
  for (const auto& c : store_.clusters()) {
    if (!live(c)) continue;
    {
      std::lock_guard lock(mu_);
      auto last = samples_.find(c.id);
      bool fresh = last != samples_.end() && last->second.ok && now - last->second.time < period_;
      // A cluster Slurm did not answer for is asked again sooner, but not every second.
      bool asked_lately = tried_.count(c.id) && now - tried_[c.id] < std::min(period_, 5.0);
      if (fresh || asked_lately) continue;
      tried_[c.id] = now;
    }
    SlurmSample sample;
    sample.time = now;
    if (auto client = client_for_(c)) {
      auto nodes = client->nodes();
      auto jobs = nodes ? client->jobs() : Result<std::vector<slurm::JobState>>(nodes.error());
      if (nodes && jobs) sample = summarize(*nodes, *jobs, ids::now_seconds());
    }
    std::lock_guard lock(mu_);
    samples_[c.id] = std::move(sample);
  }
}

std::map<std::string, SlurmSample> SlurmSampler::samples() const {
  std::lock_guard lock(mu_);
  return samples_;
}

void SlurmSampler::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void SlurmSampler::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SlurmSampler::run() {
  while (true) {
    sample_all();
    std::unique_lock lock(mu_);
    // A 1 s tick: a new cluster gets its first sample soon; each is asked at most per period.
    if (cv_.wait_for(lock, 1s, [&] { return stop_; })) return;
  }
}

}  // namespace endure::metrics
