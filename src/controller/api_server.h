// endured's HTTP front: authenticates each request and hands it to the ApiRouter.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "controller/api_router.h"

namespace httplib {
class Server;
}

namespace endure::controller {

class ApiServer {
 public:
  ApiServer(ApiRouter& router, std::string operator_token);
  ~ApiServer();

  // Binds 127.0.0.1:port (loopback only) and serves on a thread of its own.
  Status start(int port);
  // Also serves agents and auto-resume supervisors on other machines: every address of
  // this machine at port, over TLS only (cert_file signed by endured's CA). Operator
  // actions are refused there: the operator API stays on loopback.
  Status start_tls(int port, const std::string& cert_file, const std::string& key_file);
  void stop();

 private:
  void serve(httplib::Server& server, bool agents_only);

  ApiRouter& router_;
  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Server> tls_server_;
  std::thread tls_thread_;
};

}  // namespace endure::controller
