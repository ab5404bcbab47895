#include "swarm_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace endure::swarm {
namespace {

// Names of CallError's kinds in the results, in its order.
constexpr std::array<const char*, 7> kErrorNames = {"none",  "socket",    "connect", "timeout",
                                                    "reset", "bad_reply", "http"};

std::size_t rank_index(double p, std::size_t n) {
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  return std::clamp<std::size_t>(rank, 1, n) - 1;
}

}  // namespace

void ErrorCounts::add(CallError kind, int http_status) {
  ++total_;
  if (kind == CallError::kHttp) {
    ++by_status_[http_status];
  } else {
    ++by_kind_[static_cast<std::size_t>(kind)];
  }
}

json ErrorCounts::to_json() const {
  json by_kind = json::object();
  for (std::size_t k = 0; k < by_kind_.size(); ++k) {
    if (by_kind_[k] > 0) by_kind[kErrorNames[k]] = by_kind_[k];
  }
  for (const auto& [status, n] : by_status_) {
    if (n > 0) by_kind["http_" + std::to_string(status)] = n;
  }
  return {{"total", total_}, {"by_kind", by_kind}};
}

void ErrorCounts::clear() {
  by_kind_.fill(0);
  for (auto& entry : by_status_) entry.second = 0;
  total_ = 0;
}

double LatencySamples::percentile(double p) {
  if (ms_.empty()) return 0;
  auto nth = ms_.begin() + static_cast<std::ptrdiff_t>(rank_index(p, ms_.size()));
  std::nth_element(ms_.begin(), nth, ms_.end());
  return *nth;
}

json LatencySamples::summary() {
  if (ms_.empty()) return {{"p50", 0.0}, {"p90", 0.0}, {"p99", 0.0}, {"max", 0.0}};
  std::sort(ms_.begin(), ms_.end());
  auto at = [&](double p) { return static_cast<double>(ms_[rank_index(p, ms_.size())]); };
  return {{"p50", at(50)}, {"p90", at(90)}, {"p99", at(99)}, {"max", at(100)}};
}

}  // namespace endure::swarm
