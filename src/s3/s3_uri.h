// s3://bucket/key URIs and the bucket-name rule, checked before any request is made.
#pragma once

#include <string>

#include "common/result.h"

namespace endure::s3 {

struct S3Uri {
  std::string bucket;
  std::string key;  // the object key or prefix; may be empty (the whole bucket)
  std::string str() const { return "s3://" + bucket + (key.empty() ? "" : "/" + key); }
};

// Parses "s3://BUCKET" or "s3://BUCKET/KEY-OR-PREFIX". field names the setting in the
// errors ("LifeCycleConfig.SourceS3Uri: ..."). Fails with ValidationException when the
// scheme is not s3://, or the bucket breaks the bucket-name rule.
Result<S3Uri> parse_s3_uri(const std::string& text, const std::string& field = "S3 URI");

// S3's bucket-name rule: 3-63 characters of lowercase letters, digits, '.' and '-',
// beginning and ending with a letter or digit, no "..". The reason it fails, or "" when
// name is valid.
std::string bucket_name_problem(const std::string& name);

// A key the client can send: 1-1024 bytes, no NUL. The reason it fails, or "".
std::string object_key_problem(const std::string& key);

}  // namespace endure::s3
