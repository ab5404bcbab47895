// What the swarm measures: failed calls by kind, and latency samples with exact percentiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "common/json.h"

namespace endure::swarm {

// Why a call failed. kHttp: a whole reply whose status was not 200.
enum class CallError : uint8_t { kNone, kSocket, kConnect, kTimeout, kReset, kBadReply, kHttp };

// Failed calls, by kind; a reply with a status other than 200 counts as "http_<status>".
class ErrorCounts {
 public:
  // http_status is read only when kind is kHttp.
  void add(CallError kind, int http_status = 0);
  int64_t total() const { return total_; }
  // {"total": n, "by_kind": {"connect": n, "http_401": n, ...}}, kinds seen only.
  json to_json() const;
  void clear();

 private:
  std::array<int64_t, 7> by_kind_{};
  std::map<int, int64_t> by_status_;  // a node is made once per status ever seen
  int64_t total_ = 0;
};

// Latencies in milliseconds. Kept whole (10,000/s for a minute is 2.4 MB), so the
// percentiles are exact.
class LatencySamples {
 public:
  void reserve(std::size_t n) { ms_.reserve(n); }
  void add(double ms) { ms_.push_back(static_cast<float>(ms)); }
  std::size_t size() const { return ms_.size(); }
  void clear() { ms_.clear(); }

  // The nearest-rank percentile p (0 to 100); 0 when there are no samples. Reorders them.
  double percentile(double p);
  // {"p50", "p90", "p99", "max"}, each 0 when there are no samples. Reorders them.
  json summary();

 private:
  std::vector<float> ms_;
};

}  // namespace endure::swarm
