// endured's API calls by action and HTTP status, with their latency: what ApiServer tells
// HttpExtras::observe after every POST /v1/<Action>. The action comes from the URL, so any
// name endured does not serve counts as "Unknown": a caller cannot grow the label set.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "controller/metrics/text_format.h"

namespace endure::metrics {

class ApiStats {
 public:
  void observe(const std::string& action, int status, double seconds);
  // endure_api_requests_total{action,code} and endure_api_request_duration_seconds{action}.
  void write(TextWriter& out) const;

  // The action's label: itself when endured serves it, "Unknown" otherwise.
  static const std::string& action_label(const std::string& action);

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, double> requests_;
  std::map<std::string, Histogram> latency_;
};

}  // namespace endure::metrics
