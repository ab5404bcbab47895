// One signed HTTP request to an S3 endpoint over libcurl, on a pool of reused handles (so
// connections stay open between requests). Signing is curl's SigV4 (CURLOPT_AWS_SIGV4);
// the payload's SHA-256 is sent as x-amz-content-sha256, which curl 7.88 does not add.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "s3/s3_config.h"

namespace endure::s3 {

struct HttpRequest {
  std::string method = "GET";        // GET, HEAD, PUT, POST or DELETE
  std::string url;                   // already encoded (request_url.h), query sorted
  std::vector<std::string> headers;  // "Name: value", beyond the ones the transport adds
  std::string_view body;             // not copied: it must outlive perform()
  std::string content_type = "application/octet-stream";
  // When set, a 2xx reply's body goes here instead of HttpResponse::body (a ranged GET into
  // a buffer or a file); returning false abandons the transfer. sink_reset is called before
  // every attempt so that a retried GET starts writing from its beginning again.
  std::function<bool(const char* data, size_t size)> sink;
  std::function<void()> sink_reset;
};

struct HttpResponse {
  long status = 0;                             // 0 when no reply came
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  bool transport_failed = false;
  bool transport_retryable = false;
  std::string transport_error;  // curl's words for why no reply came
};

// Hex SHA-256 of data (the x-amz-content-sha256 value).
std::string sha256_hex(std::string_view data);
// Base64 MD5 of data (the Content-MD5 that DeleteObjects requires).
std::string md5_base64(std::string_view data);

class HttpTransport {
 public:
  // REQUIRES: validate_config(config) is ok.
  explicit HttpTransport(const S3Config& config);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // One attempt; never throws. Thread-safe: each call takes a handle of its own.
  HttpResponse perform(const HttpRequest& request);

 private:
  void* acquire();
  void release(void* handle);

  S3Config config_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* handles, kept to reuse their connections
};

}  // namespace endure::s3
