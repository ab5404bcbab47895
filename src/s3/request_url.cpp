#include "s3/request_url.h"

namespace endure::s3 {

std::string uri_encode(std::string_view text, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string object_url(const S3Config& config, const std::string& bucket, const std::string& key,
                       const std::map<std::string, std::string>& query) {
  // A bucket-level request in path style has no trailing '/': the path the server signs is
  // "/BUCKET", as the AWS tools send it.
  std::string url = config.bucket_url(bucket);
  if (!key.empty() || !config.path_style) url += "/" + uri_encode(key, true);
  // std::map iterates in name order: the canonical order SigV4 wants (names are ASCII).
  char sep = '?';
  for (const auto& [name, value] : query) {
    url += sep;
    url += uri_encode(name, false) + "=" + uri_encode(value, false);
    sep = '&';
  }
  return url;
}

}  // namespace endure::s3
