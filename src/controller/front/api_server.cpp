#include "controller/front/api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "api/wire.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/front/aws_protocol.h"
#include "controller/front/sigv4.h"

namespace endure::controller {
namespace {

int http_status(const std::string& code) {
  if (code == api::kValidationException || code == "UnknownOperation") return 400;
  if (code == api::kUnauthorized) return 401;
  if (code == api::kResourceNotFound) return 404;
  if (code == api::kResourceInUse || code == api::kConflictException) return 409;
  return 500;
}

std::string bearer(const httplib::Request& req) {
  std::string h = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return h.rfind(prefix, 0) == 0 ? h.substr(prefix.size()) : "";
}

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

// httplib listens with a backlog of 5 connections: thousands of agents, each heartbeat on a
// new connection, overflow it, and the kernel drops their SYNs, which clients retry only
// after 1 s, then 3 s. listen() again on the bound socket raises it to the kernel's limit.
void widen_backlog(int listen_fd) {
  if (listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    log::warn("listen backlog stays at httplib's 5: {}", std::strerror(errno));
  }
}

void reply_error(httplib::Response& res, const Error& e) {
  reply(res, http_status(e.code), {{"__type", e.code}, {"message", e.message}});
}

// A request id in the service's form (8-4-4-4-12 hex digits).
std::string new_request_id() {
  std::string hex = ids::random_hex(32);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

sigv4::Request signed_request(const httplib::Request& req) {
  sigv4::Request out;
  out.method = req.method;
  // The path as sent, still encoded: the signature covers it so.
  out.path = req.target.empty() ? req.path : req.target.substr(0, req.target.find('?'));
  for (const auto& [k, v] : req.params) out.query.emplace_back(k, v);
  for (const auto& [k, v] : req.headers) out.headers.emplace_back(k, v);
  out.body = req.body;
  return out;
}

}  // namespace

ApiServer::ApiServer(ApiRouter& router, std::string operator_token, const AccessKeys* access_keys)
    : router_(router),
      token_(std::move(operator_token)),
      access_keys_(access_keys),
      server_(new httplib::Server) {}

ApiServer::~ApiServer() { stop(); }

void ApiServer::serve(httplib::Server& server, bool agents_only, int& listen_fd) {
  // httplib's default also sets SO_REUSEPORT, which lets a second endured bind the same
  // port and take half the calls; a port in use must be an error.
  server.set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;
  });
  // A reply written as headers then body waits for the client's delayed ACK (~40 ms)
  // under Nagle on a kept-alive connection, as Prometheus' scrapes are: send at once.
  server.set_tcp_nodelay(true);
  server.Post(R"(/v1/([A-Za-z]+))", [this, agents_only](const httplib::Request& req,
                                                        httplib::Response& res) {
    std::string action = req.matches[1];
    const auto t0 = std::chrono::steady_clock::now();
    handle(action, req, res, agents_only);
    if (extras_.observe) {
      extras_.observe(action, res.status,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  });
  if (!agents_only) {
    server.Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = std::chrono::steady_clock::now();
      std::string action = handle_protocol(req, res);
      if (extras_.observe) {
        extras_.observe(action, res.status,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    });
    serve_extras(server);
  }
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      reply(
          res, res.status,
          {{"__type", "HTTP" + std::to_string(res.status)}, {"message", "use POST /v1/<Action>"}});
    }
  });
}

void ApiServer::serve_extras(httplib::Server& server) {
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (!extras_.metrics) {
      res.status = 404;
      return;
    }
    res.set_content(extras_.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get(
      "/", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/console/"); });
  server.Get(R"(/console/(.*))", [this](const httplib::Request& req, httplib::Response& res) {
    std::string path = req.matches[1];
    if (path.empty()) path = "index.html";
    std::string body, type;
    if (!extras_.console_file || !extras_.console_file(path, body, type)) {
      res.status = 404;
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
    res.set_content(body, type);
  });
}

void ApiServer::handle(const std::string& action, const httplib::Request& req,
                       httplib::Response& res, bool agents_only) {
  bool agent_call = action.rfind("Agent", 0) == 0;
  // Calls from a job's processes on the nodes carry the cluster's job credential.
  bool auto_resume_call =
      action.rfind("AutoResume", 0) == 0 || action == api::kReportTrainingMetrics;
  if (agents_only && !agent_call && !auto_resume_call) {
    return reply_error(res, make_error(api::kUnauthorized,
                                       action + ": the operator API is served on loopback only"));
  }
  std::string token = bearer(req);
  // Authentication comes before parsing: a caller without a token learns nothing.
  bool operator_ok = ids::same_secret(token, token_);
  if (!agent_call && !auto_resume_call && !operator_ok) {
    return reply_error(res, make_error(api::kUnauthorized, "missing or invalid token"));
  }
  json request = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
  if (request.is_discarded()) {
    return reply_error(res, make_error(api::kValidationException, "request: is not valid JSON"));
  }
  std::string instance_id = req.get_header_value(api::kInstanceIdHeader);
  // Before authentication: an InstanceId of another type names no instance (and is not
  // thrown on); the agent service names the field once the caller is known.
  if (auto it = request.find("InstanceId");
      instance_id.empty() && request.is_object() && it != request.end() && it->is_string()) {
    instance_id = it->get<std::string>();
  }
  Result<json> result = agent_call ? router_.handle_agent(action, instance_id, token, request)
                        : auto_resume_call
                            ? router_.handle_auto_resume(action, token, operator_ok, request)
                            : router_.handle(action, request);
  if (!result) {
    if (!agent_call) log::info("{}: {}: {}", action, result.error().code, result.error().message);
    return reply_error(res, result.error());
  }
  reply(res, 200, *result);
}

std::string ApiServer::handle_protocol(const httplib::Request& req, httplib::Response& res) {
  res.set_header(aws::kRequestIdHeader, new_request_id());
  auto fail = [&res](const Error& e) {
    res.status = aws::http_status(e.code);
    res.set_content(aws::error_body(e).dump(), aws::kContentType);
  };
  std::string target = req.get_header_value(aws::kTargetHeader);
  std::string prefix = aws::kTargetPrefix;
  std::string action = target.rfind(prefix, 0) == 0 ? target.substr(prefix.size()) : "";
  // Authentication before anything else: an unsigned or badly signed request learns
  // nothing and changes nothing. Messages name no secret and no expected signature.
  auto secret_of = [this](const std::string& id) -> std::optional<std::string> {
    return access_keys_ ? access_keys_->secret_of(id) : std::nullopt;
  };
  auto who =
      sigv4::verify(signed_request(req), secret_of, ids::now_seconds(), aws::kSigningName);
  if (!who) {
    log::info("{}: refused: {}: {}", target.empty() ? "POST /" : target, who.error().code,
              who.error().message);
    fail(who.error());
    return "Unauthenticated";
  }
  if (action.empty()) {
    fail(make_error(aws::kUnknownOperation, "X-Amz-Target: must be SageMaker.<Action>"));
    return "Unknown";
  }
  if (req.get_header_value("Content-Type").rfind(aws::kContentType, 0) != 0) {
    fail(make_error("SerializationException",
                    std::string("Content-Type: must be ") + aws::kContentType));
    return action;
  }
  json request = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
  if (request.is_discarded()) {
    fail(make_error("SerializationException", "request body: is not valid JSON"));
    return action;
  }
  auto result = aws::call(action, request, [this](const std::string& a, const json& r) {
    return router_.handle(a, r);
  });
  if (!result) {
    log::info("{} ({}): {}: {}", action, *who, result.error().code, result.error().message);
    fail(result.error());
    return result.error().code == aws::kUnknownOperation ? "Unknown" : action;
  }
  res.status = 200;
  res.set_content(result->dump(), aws::kContentType);
  return action;
}

Status ApiServer::start(int port) {
  serve(*server_, /*agents_only=*/false, listen_fd_);
  if (!server_->bind_to_port("127.0.0.1", port)) {
    return make_error("BindError", "cannot listen on 127.0.0.1:" + std::to_string(port) +
                                       " (in use? set Port in config.json or --port)");
  }
  widen_backlog(listen_fd_);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return {};
}

Status ApiServer::start_tls(int port, const std::string& cert_file, const std::string& key_file) {
  auto server = std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str());
  if (!server->is_valid()) {
    return make_error("TlsError", "cannot serve TLS with " + cert_file + " and " + key_file);
  }
  serve(*server, /*agents_only=*/true, tls_listen_fd_);
  // Every address: agents on other machines reach it, and TLS protects it.
  if (!server->bind_to_port("0.0.0.0", port)) {
    return make_error("BindError", "cannot listen on 0.0.0.0:" + std::to_string(port) +
                                       " for agents over TLS (in use? set AgentTlsPort)");
  }
  widen_backlog(tls_listen_fd_);
  tls_server_ = std::move(server);
  tls_thread_ = std::thread([this] { tls_server_->listen_after_bind(); });
  return {};
}

void ApiServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (tls_server_) tls_server_->stop();
  if (tls_thread_.joinable()) tls_thread_.join();
}

}  // namespace endure::controller
