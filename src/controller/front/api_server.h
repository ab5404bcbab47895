// endured's HTTP front: authenticates each request and hands it to the ApiRouter. Two
// routes reach the operator actions on loopback: `POST /v1/<Action>` with the bearer token,
// and the cloud service's protocol (`POST /` with X-Amz-Target, signed with Signature
// Version 4 by an access key; aws_protocol.h) for the aws CLI, boto3 and the SDKs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "controller/front/access_keys.h"
#include "controller/front/api_router.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace endure::controller {

// What the loopback server serves besides the API, set before start().
struct HttpExtras {
  // GET /metrics: Prometheus' text format (loopback only, no token, as Prometheus expects).
  std::function<std::string()> metrics;
  // Told of every API call: its action, HTTP status and seconds taken.
  std::function<void(const std::string& action, int status, double seconds)> observe;
  // GET /console/<path>: a file of the web console (false: none of that name). The
  // console's pages hold no data; they read it through the API with the operator's token.
  std::function<bool(const std::string& path, std::string& body, std::string& content_type)>
      console_file;
};

class ApiServer {
 public:
  // access_keys: the keys signed requests are checked against (none: every signed request
  // is refused as from an unknown key).
  ApiServer(ApiRouter& router, std::string operator_token,
            const AccessKeys* access_keys = nullptr);
  ~ApiServer();

  // Binds 127.0.0.1:port (loopback only) and serves on a thread of its own.
  Status start(int port);
  void set_extras(HttpExtras extras) { extras_ = std::move(extras); }
  // Also serves agents and auto-resume supervisors on other machines: every address of
  // this machine at port, over TLS only (cert_file signed by endured's CA). Operator
  // actions are refused there: the operator API stays on loopback.
  Status start_tls(int port, const std::string& cert_file, const std::string& key_file);
  void stop();

 private:
  // Sets the routes and socket options; listen_fd gets the listening socket at bind.
  void serve(httplib::Server& server, bool agents_only, int& listen_fd);
  void serve_extras(httplib::Server& server);
  void handle(const std::string& action, const httplib::Request& req, httplib::Response& res,
              bool agents_only);
  // POST / : the signature checked first, then the action served through aws_protocol.
  // Returns the action for the metrics ("Unknown" for one the protocol does not serve).
  std::string handle_protocol(const httplib::Request& req, httplib::Response& res);

  ApiRouter& router_;
  std::string token_;
  const AccessKeys* access_keys_;
  HttpExtras extras_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int listen_fd_ = -1;  // the servers' listening sockets, once bound
  int tls_listen_fd_ = -1;
  std::unique_ptr<httplib::Server> tls_server_;
  std::thread tls_thread_;
};

}  // namespace endure::controller
