// The one HTTP client: JSON requests to endured with a bearer token.
#pragma once

#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 0;
};

// Parses "http://127.0.0.1:7117" (scheme optional).
Result<Endpoint> parse_endpoint(const std::string& text);

class HttpClient {
 public:
  HttpClient(Endpoint endpoint, std::string token, double timeout_seconds = 30);

  // POSTs body to path. A 2xx reply returns its JSON; any other reply returns an Error
  // whose code is the reply's "__type" (or HTTP<status>) and message its "message".
  Result<json> post(const std::string& path, const json& body) const;

 private:
  Endpoint endpoint_;
  std::string token_;
  double timeout_seconds_;
};

}  // namespace endure
