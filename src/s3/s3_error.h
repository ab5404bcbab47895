// Errors for failed S3 requests that say what was asked of which object and why it failed:
// "GetObject s3://bucket/key: not found (404 NoSuchKey: The specified key does not exist.)".
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace endure::s3 {

// Error::code for a request that never got a reply (refused, reset, stalled).
inline constexpr const char* kUnreachable = "S3Unreachable";

// The S3 error code and message of an <Error> reply body ("" when the body is not one).
struct S3ErrorBody {
  std::string code;
  std::string message;
};
S3ErrorBody parse_error_body(std::string_view body);

// The Error for a reply that was not a success. Its code is S3's <Code> when the body has
// one, else NoSuchKey/NoSuchBucket/NotFound for 404, AccessDenied for 403, HTTP<status>.
Error reply_error(std::string_view operation, const std::string& bucket, const std::string& key,
                  long status, std::string_view body, int attempts);

// The Error for a request that got no reply after `attempts` tries.
Error unreachable_error(std::string_view operation, const std::string& bucket,
                        const std::string& key, const std::string& why, int attempts);

// Classes of error callers act on.
bool is_not_found(const Error& error);
bool is_access_denied(const Error& error);

}  // namespace endure::s3
