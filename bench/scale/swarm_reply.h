// Reads one HTTP/1.x reply as its bytes arrive, keeping only what the swarm needs: the
// status code, and where the reply ends (Content-Length bytes of body, or the server's close).
#pragma once

#include <cstddef>
#include <cstdint>

namespace endure::swarm {

class ReplyReader {
 public:
  // A head longer than this is taken as malformed (endured's are about 150 bytes).
  static constexpr std::size_t kMaxHead = 4096;

  enum class State { kReading, kDone, kMalformed };

  void reset();

  // Takes the next n bytes of the reply. kDone once the head and Content-Length bytes of
  // body are in; kMalformed when the head is not HTTP/1.x or outgrows kMaxHead.
  State feed(const char* data, std::size_t n);

  // The server closed the connection: kDone when the reply is whole (a reply without
  // Content-Length ends here), kReading when it was cut short.
  State at_close() const;

  // The reply's status code; valid once the head is in.
  int status() const { return status_; }

 private:
  bool parse_head();

  char head_[kMaxHead];
  std::size_t head_len_ = 0;
  bool head_done_ = false;
  int status_ = 0;
  int64_t content_length_ = -1;  // -1: the body ends at close
  int64_t body_read_ = 0;
};

}  // namespace endure::swarm
