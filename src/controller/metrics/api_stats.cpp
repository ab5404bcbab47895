#include "controller/metrics/api_stats.h"

#include <set>

#include "api/messages.h"

namespace endure::metrics {
namespace {

// The actions endured serves, from the wire registry (every action of wire.h): the label
// set is bounded whatever a caller puts in the URL.
const std::set<std::string>& served_actions() {
  static const std::set<std::string> actions = [] {
    std::set<std::string> names;
    for (const auto& a : api::all_actions()) names.insert(a.action);
    return names;
  }();
  return actions;
}

// Calls take milliseconds; the top buckets catch a call stuck behind a slow store.
std::vector<double> latency_bounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace

const std::string& ApiStats::action_label(const std::string& action) {
  static const std::string unknown = "Unknown";
  auto it = served_actions().find(action);
  return it == served_actions().end() ? unknown : *it;
}

void ApiStats::observe(const std::string& action, int status, double seconds) {
  const std::string& label = action_label(action);
  std::lock_guard lock(mu_);
  requests_[{label, status}] += 1;
  auto it = latency_.find(label);
  if (it == latency_.end()) it = latency_.emplace(label, Histogram(latency_bounds())).first;
  it->second.observe(seconds);
}

void ApiStats::write(TextWriter& out) const {
  std::lock_guard lock(mu_);
  out.family("endure_api_requests_total", "counter",
             "API calls (POST /v1/<Action>) by action and HTTP status.");
  std::string code;
  for (const auto& [key, n] : requests_) {
    code = std::to_string(key.second);
    out.sample("endure_api_requests_total", {{"action", key.first}, {"code", code}}, n);
  }
  out.family("endure_api_request_duration_seconds", "histogram",
             "Time endured took to answer an API call, by action.");
  for (const auto& [action, h] : latency_) {
    out.histogram("endure_api_request_duration_seconds", {{"action", action}}, h);
  }
}

}  // namespace endure::metrics
