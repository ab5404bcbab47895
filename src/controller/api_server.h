// endured's HTTP front: authenticates each request and hands it to the ClusterService.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "controller/cluster_service.h"

namespace httplib {
class Server;
}

namespace endure::controller {

class ApiServer {
 public:
  ApiServer(ClusterService& service, std::string operator_token);
  ~ApiServer();

  // Binds 127.0.0.1:port (loopback only) and serves on a thread of its own.
  Status start(int port);
  void stop();

 private:
  ClusterService& service_;
  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace endure::controller
