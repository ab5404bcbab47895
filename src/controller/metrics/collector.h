// What GET /metrics on endured shows, in Prometheus' text format: each cluster's state
// from the store (clusters and nodes by status, warm spares ready, heartbeat ages), its
// counters and histograms folded from the event log (event_tally.h), the agents' node
// gauges, the API's calls, and Slurm's view from the sampler. Every metric carries a
// `cluster` label (the cluster's name).
//
// A scrape costs a few store reads plus the events since the last scrape, and renders at
// most once per cache_seconds: scrapes in between get the same text.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "controller/metrics/api_stats.h"
#include "controller/metrics/event_tally.h"
#include "controller/metrics/node_gauges.h"
#include "controller/metrics/slurm_sampler.h"
#include "controller/metrics/text_format.h"
#include "store/store.h"

namespace endure::metrics {

struct CollectorParts {
  store::Store& store;
  NodeGauges& node_gauges;
  ApiStats& api;
  const SlurmSampler* slurm = nullptr;  // none: no slurm_* metrics
  // Seconds since the instance's last heartbeat, negative when none was heard.
  std::function<double(const std::string& instance_id)> heartbeat_age;
  // Node statuses shown (as 0) even when no node has them, so a series does not vanish
  // when its last node leaves the status (controller::all_node_statuses()).
  std::vector<std::string> node_statuses;
  double cache_seconds = 0.5;
};

class Collector {
 public:
  explicit Collector(CollectorParts parts) : p_(std::move(parts)) {}

  // Writes further families after endured's own (training gauges, ...). Called under the
  // collector's lock, once per render; it must write whole families with unique names.
  using FamilyWriter = std::function<void(TextWriter&)>;
  void add_family_writer(FamilyWriter writer);

  // The whole /metrics text, rendered at most once per cache_seconds.
  std::string render();

 private:
  struct ClusterView {
    store::ClusterRow row;
    std::vector<store::InstanceRow> instances;
    const EventTally* tally = nullptr;
  };
  std::string render_now();
  void fold_events(const std::string& cluster_id);
  void write_state(TextWriter& out, const std::vector<ClusterView>& clusters);
  void write_events(TextWriter& out, const std::vector<ClusterView>& clusters);
  void write_nodes(TextWriter& out, const std::vector<ClusterView>& clusters);
  void write_slurm(TextWriter& out, const std::vector<ClusterView>& clusters);

  CollectorParts p_;
  std::mutex mu_;
  std::map<std::string, EventTally> tallies_;  // by cluster id
  std::vector<FamilyWriter> writers_;
  std::string cache_;
  std::chrono::steady_clock::time_point rendered_at_{};
};

}  // namespace endure::metrics
