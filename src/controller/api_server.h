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
  void stop();

 private:
  ApiRouter& router_;
  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace endure::controller
