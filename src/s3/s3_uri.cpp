#include "s3/s3_uri.h"

#include "common/error_codes.h"

namespace endure::s3 {

namespace {
bool lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
}  // namespace

std::string bucket_name_problem(const std::string& name) {
  if (name.empty()) return "the bucket name is empty";
  if (name.size() < 3 || name.size() > 63) {
    return "a bucket name is 3 to 63 characters long, not " + std::to_string(name.size());
  }
  for (char c : name) {
    if (!lower_or_digit(c) && c != '.' && c != '-') {
      return std::string("a bucket name holds only lowercase letters, digits, '.' and '-', not '") +
             c + "'";
    }
  }
  if (!lower_or_digit(name.front()) || !lower_or_digit(name.back())) {
    return "a bucket name begins and ends with a lowercase letter or a digit";
  }
  if (name.find("..") != std::string::npos) return "a bucket name has no two adjacent dots";
  return "";
}

std::string object_key_problem(const std::string& key) {
  if (key.empty()) return "the object key is empty";
  if (key.size() > 1024) return "an object key is at most 1024 bytes";
  if (key.find('\0') != std::string::npos) return "an object key holds no NUL byte";
  return "";
}

Result<S3Uri> parse_s3_uri(const std::string& text, const std::string& field) {
  auto fail = [&](const std::string& rule) {
    return make_error(errors::kValidationException, field + " '" + text + "': " + rule);
  };
  static const std::string kScheme = "s3://";
  if (text.rfind(kScheme, 0) != 0) return fail("must start with s3:// (s3://BUCKET/PREFIX)");
  std::string rest = text.substr(kScheme.size());
  auto slash = rest.find('/');
  S3Uri uri;
  uri.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) uri.key = rest.substr(slash + 1);
  if (auto problem = bucket_name_problem(uri.bucket); !problem.empty()) return fail(problem);
  if (uri.key.size() > 1024) return fail("the key or prefix is at most 1024 bytes");
  if (uri.key.find('\0') != std::string::npos) return fail("the key or prefix holds no NUL byte");
  return uri;
}

}  // namespace endure::s3
