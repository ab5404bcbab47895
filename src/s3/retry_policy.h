// Which failures are worth another try, and how long to wait before it: pure functions, so
// the policy is tested without a server.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "s3/s3_config.h"

namespace endure::s3 {

// What one attempt came to, as far as retrying cares.
struct AttemptOutcome {
  bool transport_failed = false;     // no HTTP reply: refused, reset, timed out, stalled
  bool transport_retryable = false;  // ...and another try could help (not a malformed URL)
  long http_status = 0;
  std::string s3_code;  // the reply's <Code>, when it had one
};

// True for connection failures, 5xx, 429 and S3's throttling and timeout codes (SlowDown,
// RequestTimeout, ...). Never for other 4xx: a refused signature or a missing key does not
// change by asking again.
bool is_retryable(const AttemptOutcome& outcome);

// The wait before retry number `retry` (0 for the first retry): full jitter over an
// exponentially growing window, min(max_delay, base_delay * 2^retry); `random` is uniform in
// [0, 1) and passed in so the schedule is testable.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random);

}  // namespace endure::s3
