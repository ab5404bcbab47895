// A memory store's data path: shards in and out at the speed of the network, beside the
// HTTP front (server.h), whose HTTP library reads a request's body 4 KiB at a time (a
// put of 1 GiB ran at 0.25 GB/s on loopback). It listens on the HTTP port + 1, and each
// connection carries any number of requests, one after another:
//
//   -> frame {"Op": "Put", "Token", "Run", "Step", "Object", "Bytes": N}
//   <- frame {"Ok": true}                     the room is held: send the body
//   -> N bytes
//   <- frame {"Ok": true, "Bytes": N}
//   -> frame {"Op": "Get", "Token", "Run", "Step", "Object"}
//   <- frame {"Ok": true, "Bytes": N}, then N bytes
//
// Frames are common/framed_socket.h's. A refusal is {"Ok": false, "__type", "message"}
// (the codes of server.h), in place of the first reply: a put refused for want of room or
// for a bad name costs no body sent, and the connection goes on, as it does after a get of
// an object not held; after any other refusal (a bad token, a malformed request) the store
// closes it. A put is received straight into
// the object's pages; a get is sent from its file with sendfile().
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/result.h"
#include "memstore/arena.h"

namespace endure::memstore {

class DataServer {
 public:
  DataServer(Arena& arena, std::string token);
  ~DataServer();

  // Listens on address:port (0: any free port) and serves in the background.
  Status start(const std::string& address, int port);
  int port() const { return port_; }
  // Closes the listening socket and every connection, and waits for their threads.
  void stop();

 private:
  void accept_loop();
  void serve(int fd);
  // One request: false ends the connection.
  bool handle(int fd);
  Arena& arena_;
  std::string token_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::set<int> connections_;
  int serving_ = 0;  // connection threads still running
  std::atomic<bool> stopping_{false};
};

}  // namespace endure::memstore
