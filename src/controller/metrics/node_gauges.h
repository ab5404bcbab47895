// The latest gauges each node's agent sent with its heartbeat (api/node_gauges.h), kept in
// memory: they are a reading, not history. AgentService records them; the collector shows
// them for the instances still live. Safe to use from several threads.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "api/node_gauges.h"
#include "common/json.h"

namespace endure::metrics {

class NodeGauges {
 public:
  // One value per api::gauge::kNodeGauges entry, NaN where the agent sent none.
  using Values = std::array<double, api::gauge::kNodeGauges.size()>;

  // Keeps the known keys whose values are numbers; others are ignored (an agent cannot
  // add metrics or labels).
  void record(const std::string& instance_id, const json& metrics);
  // Every instance's latest values.
  std::map<std::string, Values> snapshot() const;
  // Forgets every instance not in live (terminated ones), so the map stays bounded.
  void retain(const std::set<std::string>& live);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Values> values_;
};

}  // namespace endure::metrics
