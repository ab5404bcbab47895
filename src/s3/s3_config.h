// How to reach an S3-compatible store: endpoint, region, addressing, credentials, retries,
// and the sizes of parallel transfers. Filled from the AWS conventions (environment, shared
// credentials file) or set field by field (endured's settings for a cluster).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"

namespace endure::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials only; sent as x-amz-security-token
};

// Bounded retries with exponential backoff and full jitter (see retry_policy.h).
struct RetryPolicy {
  int max_attempts = 5;  // the first try included
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5000};
};

struct S3Config {
  // "http(s)://HOST[:PORT]"; empty means AWS itself, https://s3.REGION.amazonaws.com.
  std::string endpoint_url;
  std::string region = "us-east-1";
  // Path-style URLs (ENDPOINT/BUCKET/KEY) rather than virtual-hosted ones
  // (BUCKET.ENDPOINT/KEY): what a local server, MinIO or Ceph's gateway needs.
  bool path_style = false;
  Credentials credentials;
  RetryPolicy retry;
  // Parallel transfers: at most this many requests of one call in flight.
  int parallelism = 8;
  // Objects larger than multipart_threshold are uploaded in parts of part_size bytes
  // (S3's minimum part is 5 MiB, the last part excepted); ranged GETs use part_size too.
  std::uint64_t part_size = 8ull << 20;
  std::uint64_t multipart_threshold = 16ull << 20;
  std::chrono::milliseconds connect_timeout{10000};
  // A request that moves no byte for this long is abandoned (and retried): a dead peer is
  // found without capping how long a large transfer may take.
  std::chrono::milliseconds stall_timeout{30000};

  // The base URL requests for bucket go to (no trailing slash), by addressing style.
  std::string bucket_url(const std::string& bucket) const;
};

using Environment = std::map<std::string, std::string>;

// This process's environment as a map.
Environment current_environment();

// Checks every field; the error names the field and its rule (ValidationException).
Status validate_config(const S3Config& config);

// "" when url is an endpoint URL, scheme://HOST[:PORT] alone; else what is wrong with it.
std::string endpoint_url_problem(const std::string& url);
// "" when region can be a region's name; else what is wrong with it.
std::string region_problem(const std::string& region);

// The profile's keys from a shared credentials file's text (INI: [profile], key = value,
// '#'/';' comments). Fails with ValidationException naming the profile and what is missing.
Result<Credentials> parse_credentials_file(const std::string& text, const std::string& profile);

// Settings laid over the environment (endured's config.json): an empty or unset one leaves
// what the environment says. Keys are never among them: they stay in the environment or
// in a credentials file.
struct ConfigOverrides {
  std::string endpoint_url;
  std::string region;
  std::optional<bool> path_style;
  // Either set: the credentials are that file's profile even where AWS_ACCESS_KEY_ID is set,
  // as the aws tools' --profile takes them.
  std::string credentials_file;
  std::string profile;
};

// A configuration as the AWS tools build it, each setting of overrides winning over its
// variables:
// - endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; with a custom endpoint, path-style
//   addressing (what S3-compatible servers expect) unless path_style says otherwise;
// - region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1;
// - credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the
//   profile AWS_PROFILE (default "default") of AWS_SHARED_CREDENTIALS_FILE, else of
//   $HOME/.aws/credentials.
// Fails when no credentials are found, or a half is set, naming the variables and file.
Result<S3Config> config_from_environment(const Environment& env,
                                         const ConfigOverrides& overrides = {});

}  // namespace endure::s3
