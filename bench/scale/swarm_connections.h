// Calls in flight: one non-blocking TCP connection per call, as the real agent's httplib
// client makes them (a new connection, `Connection: close`), all on one epoll set, so that
// one thread keeps thousands open.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "swarm_reply.h"
#include "swarm_stats.h"

namespace endure::swarm {

// How one call ended.
struct CallOutcome {
  uint64_t tag = 0;                    // the caller's, from start()
  CallError error = CallError::kNone;  // kNone or kHttp: a whole reply was read
  int status = 0;                      // the reply's, when one was read
  int64_t started_ns = 0;              // steady clock, when connect() was called
  int64_t finished_ns = 0;             // steady clock, when the reply was whole (or it failed)
  double sent_wall = 0;                // wall clock, when the request was all written; 0 if never
};

class ConnectionPool {
 public:
  using OnDone = std::function<void(const CallOutcome&)>;

  // At most `capacity` calls at once; a call not finished `timeout_ns` after its connect()
  // fails as kTimeout. on_done hears of every call that ends, except cancelled ones; it
  // may cancel() other calls but must not start() one (it runs inside wait() and expire()).
  ConnectionPool(std::size_t capacity, int64_t timeout_ns, OnDone on_done);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Makes the epoll set. REQUIRES: called once, before anything else.
  Status open();

  bool has_room() const { return !free_.empty(); }
  std::size_t in_flight() const { return slots_.size() - free_.size(); }

  // Connects to `to` and sends `request` (a whole HTTP request). Returns the call's slot,
  // for cancel(); -1 when it failed at once (on_done hears of it at the next wait()).
  // REQUIRES: has_room().
  int start(const sockaddr_in& to, std::string_view request, uint64_t tag);

  // Closes the call in `slot` without reporting it.
  void cancel(int slot);

  // Waits up to timeout_ns for socket events (less when a call failed at once), reads and
  // writes what is ready, and reports each call that ended.
  void wait(int64_t timeout_ns);

  // Ends as kTimeout every call that has run past the timeout.
  void expire(int64_t now_ns);

 private:
  enum class Phase { kIdle, kConnecting, kSending, kReading };

  struct Call {
    int fd = -1;
    uint32_t sequence = 0;  // bumped per use, so that a late event of an old call is dropped
    Phase phase = Phase::kIdle;
    uint64_t tag = 0;
    int64_t started_ns = 0;
    double sent_wall = 0;
    std::string request;  // its capacity stays from call to call
    std::size_t sent = 0;
    ReplyReader reply;
  };

  void on_event(uint32_t slot, uint32_t events);
  // Writes what is left of the request; false when the call cannot go on now.
  bool flush(uint32_t slot);
  void read_reply(uint32_t slot);
  void finish(uint32_t slot, CallError error, int status = 0);

  int64_t timeout_ns_;
  OnDone on_done_;
  int epoll_fd_ = -1;
  std::vector<Call> slots_;
  std::vector<uint32_t> free_;
  std::vector<CallOutcome> failed_at_start_;
  std::array<epoll_event, 1024> events_{};
  std::array<char, 65536> scratch_{};
};

}  // namespace endure::swarm
