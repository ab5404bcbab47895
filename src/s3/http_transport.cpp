#include "s3/http_transport.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include <curl/curl.h>
#include <openssl/evp.h>

namespace endure::s3 {

namespace {

struct Exchange {
  const HttpRequest* request;
  HttpResponse* response;
  CURL* handle;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(ex->handle, CURLINFO_RESPONSE_CODE, &status);
  if (ex->request->sink && status >= 200 && status < 300) {
    return ex->request->sink(data, n) ? n : 0;
  }
  ex->response->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t n = size * count;
  std::string line(data, n);
  // A new status line (after a 100 Continue) starts a new set of headers.
  if (line.rfind("HTTP/", 0) == 0) {
    ex->response->headers.clear();
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string value = line.substr(colon + 1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) {
    value.erase(value.begin());
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.pop_back();
  }
  ex->response->headers[name] = value;
  return n;
}

bool retryable_transport(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

void digest(const EVP_MD* md, std::string_view data, unsigned char* out, unsigned int* len) {
  EVP_Digest(data.data(), data.size(), out, len, md, nullptr);
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char hash[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  digest(EVP_sha256(), data, hash, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[hash[i] >> 4];
    out += kHex[hash[i] & 15];
  }
  return out;
}

std::string md5_base64(std::string_view data) {
  unsigned char hash[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  digest(EVP_md5(), data, hash, &len);
  unsigned char encoded[64];
  int n = EVP_EncodeBlock(encoded, hash, static_cast<int>(len));
  return std::string(reinterpret_cast<char*>(encoded), static_cast<size_t>(n));
}

HttpTransport::HttpTransport(const S3Config& config) : config_(config) {
  // curl_global_init is not thread-safe itself: once, before any handle exists.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpTransport::~HttpTransport() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpTransport::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpTransport::release(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(handle);
}

HttpResponse HttpTransport::perform(const HttpRequest& request) {
  HttpResponse response;
  CURL* h = static_cast<CURL*>(acquire());
  if (h == nullptr) {
    response.transport_failed = true;
    response.transport_error = "curl_easy_init failed";
    return response;
  }
  // reset() clears the options but keeps the handle's open connections.
  curl_easy_reset(h);
  Exchange ex{&request, &response, h};
  char error_buffer[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  std::string sigv4 = "aws:amz:" + config_.region + ":s3";
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(h, CURLOPT_USERNAME, config_.credentials.access_key_id.c_str());
  curl_easy_setopt(h, CURLOPT_PASSWORD, config_.credentials.secret_access_key.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  // A transfer that moves less than a byte a second for stall_timeout is a dead peer.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(config_.stall_timeout.count() / 1000)));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);

  bool has_body = request.method == "PUT" || request.method == "POST";
  struct curl_slist* headers = nullptr;
  // curl 7.88 signs the hash of POSTFIELDS (empty for GET/HEAD/DELETE) but sends no
  // x-amz-content-sha256, which S3 requires; the same hash goes in the header.
  std::string hash = "x-amz-content-sha256: " + sha256_hex(has_body ? request.body : "");
  headers = curl_slist_append(headers, hash.c_str());
  std::string token;
  if (!config_.credentials.session_token.empty()) {
    token = "x-amz-security-token: " + config_.credentials.session_token;
    headers = curl_slist_append(headers, token.c_str());
  }
  std::string content_type;
  if (has_body) {
    content_type = "Content-Type: " + request.content_type;
    headers = curl_slist_append(headers, content_type.c_str());
    // No "Expect:" override to skip curl's 100-continue: curl 7.88 would sign the empty
    // header it then leaves out, and the server's signature would differ.
  }
  for (const auto& header : request.headers) headers = curl_slist_append(headers, header.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    // POSTFIELDS (not a read callback) so that curl's signature hashes the same bytes.
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data() ? request.body.data() : "");
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  CURLcode code = curl_easy_perform(h);
  curl_slist_free_all(headers);
  if (code == CURLE_OK) {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
    release(h);
  } else {
    response.transport_failed = true;
    response.transport_retryable = retryable_transport(code);
    response.transport_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    response.status = 0;
    // A handle whose transfer failed may hold a broken connection: not reused.
    curl_easy_cleanup(h);
  }
  return response;
}

}  // namespace endure::s3
