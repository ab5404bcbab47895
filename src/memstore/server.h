// A node's memory store over HTTP: the node's trainers and its peers' put and get the
// objects of an arena (arena.h). Every request carries the cluster's credential as a bearer
// token; without it a caller learns nothing.
//
//   PUT    /v1/runs/RUN/steps/STEP/OBJECT   the body, Content-Length required (the room it
//                                           takes is reserved first: 507 when it cannot fit)
//   GET    /v1/runs/RUN/steps/STEP/OBJECT   the object's bytes (404 when not held)
//   GET    /v1/runs/RUN/steps               {"Steps": [{"Step", "Complete", "Objects":
//                                           [{"Name", "Bytes"}]}]}, oldest first
//   DELETE /v1/runs/RUN[/steps/STEP]        a finished run, or one step of it
//   GET    /v1/stats                        the arena's ArenaStats
//
// Errors are {"__type", "message"} as endured's.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "memstore/arena.h"

namespace httplib {
class Server;
}

namespace endure::memstore {

class StoreServer {
 public:
  StoreServer(Arena& arena, std::string token);
  ~StoreServer();

  // Listens on address:port (port 0: any free one) in the background.
  Status start(const std::string& address, int port);
  int port() const { return port_; }
  void stop();

 private:
  void routes();
  Arena& arena_;
  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace endure::memstore
