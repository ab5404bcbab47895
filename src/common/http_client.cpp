#include "common/http_client.h"

#include <httplib.h>

#include <memory>

#include "common/error_codes.h"

namespace endure {

std::string Endpoint::url() const {
  return (tls ? "https://" : "http://") + host + ":" + std::to_string(port);
}

Result<Endpoint> parse_endpoint(const std::string& text, const std::string& ca_file) {
  std::string rest = text;
  Endpoint ep;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (rest.rfind("https://", 0) == 0) {
    rest = rest.substr(8);
    ep.tls = true;
    ep.ca_file = ca_file;
  }
  while (!rest.empty() && (rest.back() == '/' || rest.back() == '\n')) rest.pop_back();
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return make_error(errors::kValidationException,
                      "endpoint '" + text + "': must be http://HOST:PORT or https://HOST:PORT");
  }
  if (ep.tls && ep.ca_file.empty()) {
    return make_error(
        errors::kValidationException,
        "endpoint '" + text + "': https needs the CA file its certificate comes from");
  }
  ep.host = rest.substr(0, colon);
  try {
    ep.port = std::stoi(rest.substr(colon + 1));
  } catch (...) {
    ep.port = 0;
  }
  if (ep.port <= 0 || ep.port > 65535) {
    return make_error(errors::kValidationException,
                      "endpoint '" + text + "': port must be an integer from 1 to 65535");
  }
  return ep;
}

HttpClient::HttpClient(Endpoint endpoint, std::string token, double timeout_seconds)
    : endpoint_(std::move(endpoint)), token_(std::move(token)), timeout_seconds_(timeout_seconds) {}

Result<json> HttpClient::post(const std::string& path, const json& body) const {
  std::unique_ptr<httplib::Client> client;
  if (endpoint_.tls) {
    client = std::make_unique<httplib::Client>(endpoint_.url());
    // Only endured's CA, and the name or address must be the certificate's.
    client->set_ca_cert_path(endpoint_.ca_file.c_str());
    client->enable_server_certificate_verification(true);
  } else {
    client = std::make_unique<httplib::Client>(endpoint_.host, endpoint_.port);
  }
  auto secs = static_cast<time_t>(timeout_seconds_);
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(secs, 0);
  client->set_write_timeout(secs, 0);
  httplib::Headers headers{{"Authorization", "Bearer " + token_}};
  auto reply = client->Post(path.c_str(), headers, body.dump(), "application/json");
  if (!reply) {
    return make_error("ConnectionFailure", "cannot reach endured at " + endpoint_.url() + ": " +
                                               httplib::to_string(reply.error()));
  }
  json parsed = json::parse(reply->body, nullptr, false);
  if (reply->status / 100 == 2) {
    if (parsed.is_discarded()) return make_error(errors::kInternalFailure, "reply is not JSON");
    return parsed;
  }
  std::string code = "HTTP" + std::to_string(reply->status);
  std::string message = reply->body;
  if (parsed.is_object()) {
    code = parsed.value("__type", code);
    message = parsed.value("message", std::string());
  }
  return make_error(code, message);
}

}  // namespace endure
