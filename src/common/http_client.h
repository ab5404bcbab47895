// The one HTTP client: JSON requests to endured with a bearer token.
#pragma once

#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 0;
  bool tls = false;     // https: the server must prove itself with a certificate of ca_file
  std::string ca_file;  // the one CA trusted for it (endured's own), never the system's
  std::string url() const;
  static Endpoint loopback(int port) { return {"127.0.0.1", port, false, ""}; }
};

// Parses "http://127.0.0.1:7117" (scheme optional) or "https://HOST:PORT" (then ca_file,
// when given, is the CA its certificate must come from).
Result<Endpoint> parse_endpoint(const std::string& text, const std::string& ca_file = "");

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
