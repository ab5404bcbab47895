#include "common/http_client.h"

#include <httplib.h>

#include "api/wire.h"

namespace endure {

Result<Endpoint> parse_endpoint(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && (rest.back() == '/' || rest.back() == '\n')) rest.pop_back();
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return make_error(api::kValidationException,
                      "endpoint '" + text + "': must be http://HOST:PORT");
  }
  Endpoint ep;
  ep.host = rest.substr(0, colon);
  try {
    ep.port = std::stoi(rest.substr(colon + 1));
  } catch (...) {
    ep.port = 0;
  }
  if (ep.port <= 0 || ep.port > 65535) {
    return make_error(api::kValidationException,
                      "endpoint '" + text + "': port must be an integer from 1 to 65535");
  }
  return ep;
}

HttpClient::HttpClient(Endpoint endpoint, std::string token, double timeout_seconds)
    : endpoint_(std::move(endpoint)), token_(std::move(token)), timeout_seconds_(timeout_seconds) {}

Result<json> HttpClient::post(const std::string& path, const json& body) const {
  httplib::Client client(endpoint_.host, endpoint_.port);
  auto secs = static_cast<time_t>(timeout_seconds_);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(secs, 0);
  client.set_write_timeout(secs, 0);
  httplib::Headers headers{{"Authorization", "Bearer " + token_}};
  auto reply = client.Post(path.c_str(), headers, body.dump(), "application/json");
  if (!reply) {
    return make_error("ConnectionFailure", "cannot reach endured at http://" + endpoint_.host +
                                               ":" + std::to_string(endpoint_.port) + ": " +
                                               httplib::to_string(reply.error()));
  }
  json parsed = json::parse(reply->body, nullptr, false);
  if (reply->status / 100 == 2) {
    if (parsed.is_discarded()) return make_error(api::kInternalFailure, "reply is not JSON");
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
