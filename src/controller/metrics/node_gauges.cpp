#include "controller/metrics/node_gauges.h"

#include <cmath>

namespace endure::metrics {

void NodeGauges::record(const std::string& instance_id, const json& metrics) {
  Values v;
  v.fill(std::nan(""));
  if (metrics.is_object()) {
    for (std::size_t i = 0; i < api::gauge::kNodeGauges.size(); ++i) {
      auto it = metrics.find(api::gauge::kNodeGauges[i].key);
      if (it != metrics.end() && it->is_number()) v[i] = it->get<double>();
    }
  }
  std::lock_guard lock(mu_);
  values_[instance_id] = v;
}

std::map<std::string, NodeGauges::Values> NodeGauges::snapshot() const {
  std::lock_guard lock(mu_);
  return values_;
}

void NodeGauges::retain(const std::set<std::string>& live) {
  std::lock_guard lock(mu_);
  for (auto it = values_.begin(); it != values_.end();) {
    it = live.count(it->first) ? std::next(it) : values_.erase(it);
  }
}

}  // namespace endure::metrics
