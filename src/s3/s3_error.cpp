#include "s3/s3_error.h"

#include "s3/xml_reader.h"

namespace endure::s3 {

namespace {

std::string where(std::string_view operation, const std::string& bucket, const std::string& key) {
  return std::string(operation) + " s3://" + bucket + (key.empty() ? "" : "/" + key);
}

std::string attempts_note(int attempts) {
  return attempts > 1 ? " after " + std::to_string(attempts) + " attempts" : "";
}

}  // namespace

S3ErrorBody parse_error_body(std::string_view body) {
  auto doc = parse_xml(body);
  if (!doc || doc->name != "Error") return {};
  return {doc->child_text("Code"), doc->child_text("Message")};
}

Error reply_error(std::string_view operation, const std::string& bucket, const std::string& key,
                  long status, std::string_view body, int attempts) {
  S3ErrorBody parsed = parse_error_body(body);
  std::string code = parsed.code;
  if (code.empty()) {
    if (status == 404) {
      code = operation == "HeadObject" ? "NotFound" : key.empty() ? "NoSuchBucket" : "NoSuchKey";
    } else if (status == 403) {
      code = "AccessDenied";
    } else {
      code = "HTTP" + std::to_string(status);
    }
  }
  std::string what = status == 404 ? "not found" : status == 403 ? "access denied" : "failed";
  std::string detail = std::to_string(status) + " " + code;
  if (!parsed.message.empty()) detail += ": " + parsed.message;
  return make_error(code, where(operation, bucket, key) + ": " + what + " (" + detail + ")" +
                              attempts_note(attempts));
}

Error unreachable_error(std::string_view operation, const std::string& bucket,
                        const std::string& key, const std::string& why, int attempts) {
  return make_error(kUnreachable, where(operation, bucket, key) +
                                      ": no reply from the S3 endpoint (" + why + ")" +
                                      attempts_note(attempts));
}

bool is_not_found(const Error& e) {
  return e.code == "NoSuchKey" || e.code == "NoSuchBucket" || e.code == "NotFound" ||
         e.code == "NoSuchUpload";
}

bool is_access_denied(const Error& e) {
  return e.code == "AccessDenied" || e.code == "SignatureDoesNotMatch" ||
         e.code == "InvalidAccessKeyId" || e.code == "ExpiredToken" || e.code == "InvalidToken";
}

}  // namespace endure::s3
