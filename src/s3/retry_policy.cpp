#include "s3/retry_policy.h"

#include <algorithm>

namespace endure::s3 {

bool is_retryable(const AttemptOutcome& o) {
  if (o.transport_failed) return o.transport_retryable;
  if (o.http_status >= 500 || o.http_status == 429) return true;
  // S3 answers a few transient conditions with a 400 and one of these codes.
  // InternalError also comes inside a 200 reply to CompleteMultipartUpload.
  return o.s3_code == "SlowDown" || o.s3_code == "InternalError" ||
         o.s3_code == "ServiceUnavailable" || o.s3_code == "RequestTimeout" ||
         o.s3_code == "Throttling" || o.s3_code == "ThrottlingException";
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, double random) {
  double window = static_cast<double>(policy.base_delay.count());
  for (int i = 0; i < retry && window < static_cast<double>(policy.max_delay.count()); ++i) {
    window *= 2;
  }
  window = std::min(window, static_cast<double>(policy.max_delay.count()));
  random = std::clamp(random, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(window * random));
}

}  // namespace endure::s3
